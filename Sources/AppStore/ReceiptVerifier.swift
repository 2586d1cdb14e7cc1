import Dispatch
import Foundation
import JSON

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Client for Apple's legacy `verifyReceipt` endpoint (docs/FORMATS.md §3): production first, 21007 → sandbox,
/// 21008 → production; retries with backoff on temporary statuses. Synchronous: HTTP handlers are.
public final class ReceiptVerifier: Sendable {
    public static let appleProduction = URL(string: "https://buy.itunes.apple.com/verifyReceipt")!
    public static let appleSandbox = URL(string: "https://sandbox.itunes.apple.com/verifyReceipt")!

    let productionURL: URL
    let sandboxURL: URL
    let timeout: Double
    let maxRetries: Int
    let backoff: Double
    private let session: URLSession

    /// - Parameters:
    ///   - timeout: seconds per HTTP attempt.
    ///   - maxRetries: extra attempts after a temporary failure (network, 5xx, 21002/21005/21009, retryable 211xx).
    ///   - backoff: first retry delay in seconds, doubled each retry.
    public init(
        productionURL: URL = ReceiptVerifier.appleProduction, sandboxURL: URL = ReceiptVerifier.appleSandbox,
        timeout: Double = 15, maxRetries: Int = 3, backoff: Double = 0.5
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.timeout = timeout
        self.maxRetries = max(0, maxRetries)
        self.backoff = backoff
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Posts `receipt-data` (+ `password`, the app's shared secret) and returns the mapped receipt.
    /// Text that is not an app receipt's shape (`AppReceipt.checkShape`) is refused before any request.
    /// - Parameter askedAt: when the caller asks (epoch ms), the facts' `signedDate` when Apple's
    ///   answer carries no `receipt.request_date_ms`.
    public func verify(
        receiptData: String, password: String? = nil, excludeOldTransactions: Bool = false, askedAt: Int64
    ) throws(ReceiptError) -> LegacyReceipt {
        try AppReceipt.checkShape(receiptData)
        var writer = JSONWriter(capacity: receiptData.utf8.count + 128)
        writer.beginObject()
        writer.key("receipt-data")
        writer.string(receiptData)
        if let password {
            writer.key("password")
            writer.string(password)
        }
        if excludeOldTransactions {
            writer.key("exclude-old-transactions")
            writer.bool(true)
        }
        writer.endObject()
        let body = writer.bytes

        var url = productionURL
        var switches = 0
        var retries = 0
        while true {
            let outcome = post(body, to: url)
            let json: JSONValue
            let bytes: [UInt8]
            switch outcome {
            case .failure(let detail):
                guard retries < maxRetries else { throw .unavailable("\(detail) (after \(retries + 1) attempts)") }
                retries += 1
                pause(retries)
                continue
            case .success(let status, let data):
                if status >= 500 || status == 429 {
                    guard retries < maxRetries else {
                        throw .unavailable("HTTP \(status) (after \(retries + 1) attempts)")
                    }
                    retries += 1
                    pause(retries)
                    continue
                }
                guard status == 200 else { throw .unavailable("HTTP \(status) from \(url.absoluteString)") }
                do { json = try JSONValue.parse(data) } catch { throw .malformedResponse("body is not JSON: \(error)") }
                bytes = data
            }
            guard json.objectValue != nil, let appleStatus = json.int("status") else {
                throw .malformedResponse("no numeric status")
            }
            switch appleStatus {
            case 0:
                return LegacyReceipt(json: json, rawJSON: bytes, askedAt: askedAt)
            case 21007 where switches < 2:
                url = sandboxURL
                switches += 1
            case 21008 where switches < 2:
                url = productionURL
                switches += 1
            case _ where Self.isTemporary(appleStatus, json):
                guard retries < maxRetries else {
                    throw .unavailable("Apple status \(appleStatus) (after \(retries + 1) attempts)")
                }
                retries += 1
                pause(retries)
            default:
                throw .rejected(status: appleStatus)
            }
        }
    }

    /// 21002/21005/21009 are temporary; 21100–21199 only when Apple flags `is-retryable` (or `is_retryable`).
    static func isTemporary(_ status: Int, _ json: JSONValue) -> Bool {
        switch status {
        case 21002, 21005, 21009: true
        case 21100...21199: json.legacyBool("is-retryable") ?? json.legacyBool("is_retryable") ?? false
        default: false
        }
    }

    private func pause(_ retry: Int) {
        let seconds = backoff * Double(1 << min(retry - 1, 10))
        if seconds > 0 { usleep(useconds_t(seconds * 1_000_000)) }
    }

    private enum Outcome {
        case success(status: Int, body: [UInt8])
        case failure(String)
    }

    private final class Box: @unchecked Sendable { var outcome: Outcome = .failure("no response") }

    /// One POST, bridged from URLSession's callback with a semaphore.
    private func post(_ body: [UInt8], to url: URL) -> Outcome {
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body)
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                box.outcome = .failure("\(url.host ?? url.absoluteString): \(error.localizedDescription)")
            } else if let http = response as? HTTPURLResponse {
                box.outcome = .success(status: http.statusCode, body: Array(data ?? Data()))
            }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + timeout + 5) == .timedOut {
            task.cancel()
            return .failure("timed out after \(timeout) s")
        }
        return box.outcome
    }
}
