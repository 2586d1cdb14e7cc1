import Foundation
import HTTP
import Infrastructure

/// Sends one endpoint's webhook attempts on the dispatcher's HTTPPoster: libcurl's multi
/// interface on one thread for every endpoint, keep-alive connections, no thread hop per
/// transfer. (FoundationNetworking's URLSession cost a delivery about as much CPU as the
/// purchase that made its change: BENCHMARKS.md, webhooks.) Redirects are not followed (the 3xx
/// is the outcome), the response body is read up to `maxResponseBytes` and then the transfer is
/// cut, and every attempt ends within `timeoutSeconds` whatever the receiver does. A slow or
/// huge answer holds only its own transfer: the poster's thread never waits on one.
package struct WebhookSender: Sendable {
    package typealias Completion = @Sendable (WebhookPlanner.Outcome) -> Void

    package static let maxResponseBytes = 64 << 10

    package let url: String
    package let timeoutSeconds: Double
    package let poster: HTTPPoster

    /// Nil when `url` is not one (the config check makes that rare: the attempt fails "bad URL").
    package init?(url: String, timeoutSeconds: Double, poster: HTTPPoster) {
        guard URL(string: url) != nil else { return nil }
        self.url = url
        self.timeoutSeconds = timeoutSeconds
        self.poster = poster
    }

    /// POSTs `body` with `headers`; `completion` is called once, on the poster's thread.
    package func send(body: [UInt8], headers: [String: String], completion: @escaping Completion) {
        var lines = ["Content-Type: application/json", "User-Agent: iap-ledger-webhooks"]
        for (name, value) in headers { lines.append("\(name): \(value)") }
        let request = HTTPPoster.Request(
            url: url, headers: lines, body: body, timeoutSeconds: timeoutSeconds,
            maxResponseBytes: Self.maxResponseBytes)
        let timeout = timeoutSeconds
        poster.post(request) { outcome in
            switch outcome {
            case .response(let status): completion(.response(status: status))
            case .failure(let failure): completion(.error(Self.describe(failure, timeout: timeout)))
            }
        }
    }

    /// A short cause: never the response body, never the request.
    package static func describe(_ failure: HTTPPoster.Failure, timeout: Double) -> String {
        switch failure {
        case .timedOut: return "timed out after \(seconds(timeout)) s"
        case .connectionRefused: return "connection refused"
        case .connectionLost: return "connection lost"
        case .cannotResolveHost: return "cannot resolve host"
        case .tls: return "TLS failed"
        case .other(let message): return message
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
