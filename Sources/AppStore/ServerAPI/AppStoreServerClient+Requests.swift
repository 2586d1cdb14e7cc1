import Dispatch
import Foundation
import JSON

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a call reaches Apple: the environment fallback, the bounded retries, the HTTP exchange
/// and the parsing helpers every endpoint shares.
extension AppStoreServerClient {
    // MARK: Requests

    struct Call {
        var method: String
        /// Already safe: every variable segment went through `segment`.
        var path: String
        var query: [(String, String)] = []
        var body: [UInt8]? = nil
    }

    /// `environment` nil: each of `searchOrder` in turn while the answer is 4040010 (Production,
    /// then Sandbox), the last one's error when none has it.
    func sendFindingEnvironment(
        _ call: Call, _ environment: AppStoreServerEnvironment?
    ) throws(AppStoreServerError) -> (AppStoreServerEnvironment, [UInt8]) {
        if let environment { return (environment, try send(call, environment)) }
        for (index, candidate) in searchOrder.enumerated() {
            do {
                return (candidate, try send(call, candidate))
            } catch {
                guard error.appleErrorCode == AppStoreServerError.transactionIdNotFound, index < searchOrder.count - 1
                else { throw error }
            }
        }
        preconditionFailure("searchOrder is never empty")
    }

    /// One call with its bounded retries; returns a 2xx body.
    func send(_ call: Call, _ environment: AppStoreServerEnvironment) throws(AppStoreServerError) -> [UInt8] {
        guard let base = baseURL(environment) else {
            throw .invalidArgument("no base URL for \(environment.rawValue): Apple has no such host, name a stand-in's")
        }
        let url = Self.url(base, call)
        var retries = 0
        while true {
            let outcome = perform(call, url)
            let wait: Double
            let why: String
            switch outcome {
            case .failure(let detail):
                why = detail
                wait = backoff(retries + 1)
            case .answered(let status, let retryAfter, let body):
                switch status {
                case 200..<300:
                    return body
                case 429:
                    why = "HTTP 429 (rate limited)"
                    wait = retryAfter ?? backoff(retries + 1)
                    if wait > policy.maxRetryAfterSeconds {
                        throw .unavailable(
                            "rate limited: Apple asks to wait \(Int(wait)) s, more than \(Int(policy.maxRetryAfterSeconds)) s"
                        )
                    }
                case 500..<600:
                    why = "HTTP \(status)"
                    wait = backoff(retries + 1)
                case 400..<500:
                    let (code, message) = Self.appleError(body)
                    guard let code, AppStoreServerError.retryableErrorCodes.contains(code) else {
                        throw .rejected(status: status, errorCode: code, errorMessage: message)
                    }
                    guard retries < policy.maxRetries else {
                        throw .rejected(status: status, errorCode: code, errorMessage: message)
                    }
                    why = "errorCode \(code)"
                    wait = backoff(retries + 1)
                default:
                    throw .malformedResponse("unexpected HTTP \(status)")
                }
            }
            guard retries < policy.maxRetries else {
                throw .unavailable("\(why) from \(environment.rawValue) (after \(retries + 1) attempts)")
            }
            retries += 1
            sleep(wait)
        }
    }

    private func backoff(_ retry: Int) -> Double {
        min(policy.maxBackoffSeconds, policy.backoffSeconds * Double(1 << min(max(0, retry - 1), 20)))
    }

    private enum Outcome {
        case answered(status: Int, retryAfter: Double?, body: [UInt8])
        case failure(String)
    }

    private final class Box: @unchecked Sendable { var outcome: Outcome = .failure("no response") }

    /// One HTTP exchange with a freshly signed token, bridged from URLSession with a semaphore.
    private func perform(_ call: Call, _ url: URL) -> Outcome {
        var request = URLRequest(url: url, timeoutInterval: policy.timeoutSeconds)
        request.httpMethod = call.method
        request.setValue("Bearer " + token.token(nowMillis: clock()), forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("iap-ledger", forHTTPHeaderField: "User-Agent")
        if let body = call.body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body)
        }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let host = url.host ?? url.absoluteString
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                box.outcome = .failure("\(host): \(error.localizedDescription)")
            } else if let http = response as? HTTPURLResponse {
                var retryAfter: Double?
                for (name, value) in http.allHeaderFields
                where (name as? String)?.lowercased() == "retry-after" {
                    retryAfter = (value as? String).flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
                        .flatMap { $0 >= 0 ? $0 : nil }
                }
                box.outcome = .answered(status: http.statusCode, retryAfter: retryAfter, body: Array(data ?? Data()))
            }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + policy.timeoutSeconds + 5) == .timedOut {
            task.cancel()
            return .failure("\(host): timed out after \(policy.timeoutSeconds) s")
        }
        return box.outcome
    }

    // MARK: Helpers

    /// Characters left as they are in a path segment or query value (RFC 3986 unreserved).
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// An id as a path segment. Apple's ids are digits and its tokens UUIDs: anything else
    /// is refused here rather than sent (it could only be a caller's mistake or an injection).
    static func segment(_ id: String, _ name: String) throws(AppStoreServerError) -> String {
        guard !id.isEmpty, id.utf8.count <= 128,
            id.unicodeScalars.allSatisfy({ unreserved.contains($0) && $0 != "." && $0 != "~" })
        else { throw .invalidArgument("\(name) must be 1…128 letters, digits, - or _") }
        return id
    }

    static func url(_ base: URL, _ call: Call) -> URL {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        text += call.path
        if !call.query.isEmpty {
            text +=
                "?"
                + call.query.map { name, value in
                    name + "=" + (value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")
                }.joined(separator: "&")
        }
        return URL(string: text)!
    }

    static func object(_ body: [UInt8], _ what: String) throws(AppStoreServerError) -> JSONValue {
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else {
            throw .malformedResponse("\(what) is not a JSON object")
        }
        return json
    }

    /// Apple's error body `{"errorCode": int, "errorMessage": str}`, when it is one.
    static func appleError(_ body: [UInt8]) -> (Int64?, String?) {
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else { return (nil, nil) }
        return (json["errorCode"]?.int64Value, json["errorMessage"]?.stringValue)
    }

    static func attempts(_ value: JSONValue?) throws(AppStoreServerError) -> [SendAttempt] {
        guard let value, !value.isNull else { return [] }
        guard let list = value.arrayValue else { throw .malformedResponse("sendAttempts is not an array") }
        var attempts: [SendAttempt] = []
        for entry in list {
            guard entry.objectValue != nil else { throw .malformedResponse("a sendAttempts entry is not an object") }
            attempts.append(
                SendAttempt(
                    attemptDate: entry.millis("attemptDate"), sendAttemptResult: entry["sendAttemptResult"]?.stringValue
                ))
        }
        return attempts
    }
}
