import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends one endpoint's webhook attempts with FoundationNetworking (libcurl), as verifyReceipt's
/// client does, on a URLSession of its own: one endpoint's slow or huge answers never hold
/// another's connections or callbacks. Redirects are not followed (the 3xx is the outcome), the
/// response body is read up to `maxResponseBytes` and then dropped unread, and every attempt
/// ends within `timeoutSeconds` whatever the receiver does.
final class WebhookSender: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    typealias Completion = @Sendable (WebhookPlanner.Outcome) -> Void

    static let maxResponseBytes = 64 << 10

    private struct Attempt {
        var completion: Completion
        var status: Int?
        var bytes = 0
        var capped = false
        var timedOut = false
    }

    let url: URL
    let timeoutSeconds: Double
    private let attempts = Mutex<[Int: Attempt]>([:])
    private var session: URLSession!
    private let timers = DispatchQueue(label: "webhook-sender-timers")

    init(url: URL, timeoutSeconds: Double, maxConnections: Int) {
        self.url = url
        self.timeoutSeconds = timeoutSeconds
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeoutSeconds
        configuration.timeoutIntervalForResource = timeoutSeconds
        configuration.httpMaximumConnectionsPerHost = maxConnections
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    /// POSTs `body` with `headers`; `completion` is called once, on a queue of this sender.
    func send(body: [UInt8], headers: [String: String], completion: @escaping Completion) {
        var request = URLRequest(url: url, timeoutInterval: timeoutSeconds)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("iap-ledger-webhooks", forHTTPHeaderField: "User-Agent")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Data(body)
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        attempts.withLock { $0[id] = Attempt(completion: completion) }
        // The whole attempt, not only each read, is bounded: a receiver trickling bytes must not
        // hold a slot past the timeout.
        timers.asyncAfter(deadline: .now() + timeoutSeconds) { [weak self, weak task] in
            guard let self else { return }
            let pending = self.attempts.withLock { (state: inout [Int: Attempt]) -> Bool in
                guard state[id] != nil else { return false }
                state[id]!.timedOut = true
                return true
            }
            if pending { task?.cancel() }
        }
        task.resume()
    }

    func invalidate() { session.invalidateAndCancel() }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)  // never followed: the 3xx itself is the (failed) outcome
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let status = (response as? HTTPURLResponse)?.statusCode
        attempts.withLock { $0[dataTask.taskIdentifier]?.status = status }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let cap = attempts.withLock { (state: inout [Int: Attempt]) -> Bool in
            guard var attempt = state[dataTask.taskIdentifier], !attempt.capped else { return false }
            attempt.bytes += data.count
            attempt.capped = attempt.bytes > Self.maxResponseBytes
            state[dataTask.taskIdentifier] = attempt
            return attempt.capped
        }
        // Enough: the status is known, the rest of a huge answer is not worth reading.
        if cap { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let attempt = attempts.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        let outcome: WebhookPlanner.Outcome
        if attempt.timedOut {
            outcome = .error("timed out after \(Self.seconds(timeoutSeconds)) s")
        } else if let status = attempt.status, error == nil || attempt.capped {
            outcome = .response(status: status)
        } else if let status = (task.response as? HTTPURLResponse)?.statusCode, error == nil {
            outcome = .response(status: status)
        } else if let error {
            outcome = .error(Self.describe(error))
        } else {
            outcome = .error("no response")
        }
        attempt.completion(outcome)
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    /// A short cause: never the response body, never the request.
    private static func describe(_ error: Error) -> String {
        let ns = error as NSError
        switch ns.code {
        case NSURLErrorTimedOut: return "timed out"
        case NSURLErrorCannotConnectToHost: return "connection refused"
        case NSURLErrorNetworkConnectionLost: return "connection lost"
        case NSURLErrorCannotFindHost, NSURLErrorDNSLookupFailed: return "cannot resolve host"
        case NSURLErrorSecureConnectionFailed, NSURLErrorServerCertificateUntrusted,
            NSURLErrorServerCertificateHasBadDate, NSURLErrorServerCertificateNotYetValid:
            return "TLS failed"
        default: return ns.localizedDescription
        }
    }
}
