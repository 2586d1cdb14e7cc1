import CCurl
import Foundation
import Synchronization

/// POSTs on libcurl's multi interface from one thread of its own: every request of every caller
/// shares that thread and the multi handle's keep-alive connections, and a caller's completion
/// runs on that thread (keep it short: no I/O). No thread hops, no per-request queue or session;
/// easy handles are reused. Redirects are not followed (the 3xx is the answer), a response body
/// is counted up to the request's cap and then the transfer is cut (the status is known by
/// then), and every request ends within its timeout whatever the other side does.
public final class HTTPPoster: @unchecked Sendable {
    public struct Request: Sendable {
        public var url: String
        /// `Name: value` lines, sent as given.
        public var headers: [String]
        public var body: [UInt8]
        public var timeoutSeconds: Double
        public var maxResponseBytes: Int

        public init(url: String, headers: [String], body: [UInt8], timeoutSeconds: Double, maxResponseBytes: Int) {
            self.url = url
            self.headers = headers
            self.body = body
            self.timeoutSeconds = timeoutSeconds
            self.maxResponseBytes = maxResponseBytes
        }
    }

    public enum Failure: Sendable, Equatable {
        case timedOut, connectionRefused, connectionLost, cannotResolveHost, tls
        /// Anything else, in libcurl's words (never a body).
        case other(String)
    }

    public enum Outcome: Sendable, Equatable {
        /// A status line arrived (the body, if any, was read whole or up to the cap).
        case response(status: Int)
        case failure(Failure)
    }

    public typealias Completion = @Sendable (Outcome) -> Void

    /// One request on the wire: what the write callback counts and the completion to call.
    private final class Transfer {
        let easy: UnsafeMutableRawPointer
        let completion: Completion
        let cap: Int
        var received = 0
        var headers: UnsafeMutablePointer<curl_slist>?

        init(easy: UnsafeMutableRawPointer, completion: @escaping Completion, cap: Int) {
            self.easy = easy
            self.completion = completion
            self.cap = cap
        }
    }

    private struct Inbox {
        var requests: [(Request, Completion)] = []
        var stopping = false
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex<Inbox>(Inbox())
    private let finishedRunning = DispatchSemaphore(value: 0)
    // Touched only by the loop thread.
    private var idle: [UnsafeMutableRawPointer] = []
    private var running: [UnsafeMutableRawPointer: Transfer] = [:]

    /// libcurl's global set-up is not thread-safe before 7.84: done once, before any handle.
    private static let globalInit: Void = { _ = CCURL_global_init() }()

    /// Starts the loop thread (`name` shows in `top -H` and profiles).
    public init(name: String) {
        _ = Self.globalInit
        multi = curl_multi_init()!
        let thread = Thread { [self] in
            loop()
            finishedRunning.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Queues `request`; `completion` is called once, on the loop thread (not if `stop` came first).
    public func post(_ request: Request, completion: @escaping Completion) {
        // Woken under the lock: once `stop` has set `stopping`, no call reaches the freed handle.
        inbox.withLock { (inbox: inout Inbox) in
            guard !inbox.stopping else { return }
            inbox.requests.append((request, completion))
            _ = curl_multi_wakeup(multi)
        }
    }

    /// Ends the loop: requests on the wire are dropped without a completion. A second call does nothing.
    public func stop() {
        let first = inbox.withLock { (inbox: inout Inbox) -> Bool in
            guard !inbox.stopping else { return false }
            inbox.stopping = true
            _ = curl_multi_wakeup(multi)
            return true
        }
        guard first else { return }
        finishedRunning.wait()
        curl_multi_cleanup(multi)
    }

    private func loop() {
        while true {
            let (requests, stopping) = inbox.withLock { inbox in
                defer { inbox.requests.removeAll(keepingCapacity: true) }
                return (inbox.requests, inbox.stopping)
            }
            if stopping { break }
            for (request, completion) in requests { start(request, completion) }
            var stillRunning: Int32 = 0
            _ = curl_multi_perform(multi, &stillRunning)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard CCURL_message_done(message) != 0, let easy = message.pointee.easy_handle else { continue }
                finish(easy, CCURL_message_result(message))
            }
            // Sleeps until a socket is ready, libcurl's next timeout, or a wake-up by `post`.
            var ready: Int32 = 0
            _ = curl_multi_poll(multi, nil, 0, 1000, &ready)
        }
        for (easy, transfer) in running {
            curl_multi_remove_handle(multi, easy)
            curl_slist_free_all(transfer.headers)
            Unmanaged.passUnretained(transfer).release()
            curl_easy_cleanup(easy)
        }
        running.removeAll()
        for easy in idle { curl_easy_cleanup(easy) }
        idle.removeAll()
    }

    private func start(_ request: Request, _ completion: @escaping Completion) {
        guard let easy = idle.popLast() ?? curl_easy_init() else {
            completion(.failure(.other("no curl handle")))
            return
        }
        let transfer = Transfer(easy: easy, completion: completion, cap: request.maxResponseBytes)
        var headers: UnsafeMutablePointer<curl_slist>?
        // An empty Expect: a body is never held back waiting for "100 Continue".
        for line in request.headers + ["Expect:"] {
            guard let appended = curl_slist_append(headers, line) else { continue }
            headers = appended
        }
        transfer.headers = headers
        let context = Unmanaged.passRetained(transfer).toOpaque()
        let timeout = max(1, Int((request.timeoutSeconds * 1000).rounded()))
        let body = request.body.isEmpty ? [0] : request.body  // a valid pointer even for no bytes
        let prepared = body.withUnsafeBytes { bytes in
            CCURL_prepare_post(
                easy, request.url, bytes.baseAddress, request.body.count, headers, timeout, Self.onData, context)
        }
        guard prepared == CURLE_OK, curl_multi_add_handle(multi, easy) == CURLM_OK else {
            Unmanaged<Transfer>.fromOpaque(context).release()
            curl_slist_free_all(headers)
            idle.append(easy)
            completion(.failure(.other(String(cString: curl_easy_strerror(prepared)))))
            return
        }
        running[easy] = transfer
    }

    private func finish(_ easy: UnsafeMutableRawPointer, _ result: CURLcode) {
        curl_multi_remove_handle(multi, easy)
        guard let transfer = running.removeValue(forKey: easy) else { return }
        Unmanaged.passUnretained(transfer).release()  // the retain taken in `start`
        curl_slist_free_all(transfer.headers)
        let status = CCURL_response_code(easy)
        idle.append(easy)  // the connection stays in the multi handle's cache
        let outcome: Outcome
        if result == CURLE_OK || (transfer.received > transfer.cap && status > 0) {
            outcome = .response(status: status)
        } else {
            outcome = .failure(Self.failure(result))
        }
        transfer.completion(outcome)
    }

    private static func failure(_ code: CURLcode) -> Failure {
        switch CCURL_failure_kind(code) {
        case 1: return .timedOut
        case 2: return .connectionRefused
        case 3: return .connectionLost
        case 4: return .cannotResolveHost
        case 5: return .tls
        default: return .other(String(cString: curl_easy_strerror(code)))
        }
    }

    /// libcurl's write callback: counts the body and cuts the transfer once past the cap.
    private static let onData: curl_write_callback = { _, size, count, context in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let bytes = size * count
        transfer.received += bytes
        return transfer.received > transfer.cap ? 0 : bytes
    }
}
