import Synchronization

/// What MHD's C callbacks reach through `cls`: the handler, the limits and the live counters.
/// The server keeps it alive until `MHD_stop_daemon` has returned, so callbacks borrow it unretained.
final class DaemonContext: Sendable {
    let handler: @Sendable (HTTPRequest) -> HTTPResponse
    let maxBodyBytes: Int
    /// Keeps refused connections reading until their client has sent what it was sending.
    let lingering: LingeringCloser
    /// Requests between their request line and MHD's completion notice (incl. uploads and aborts).
    let liveRequests = Atomic<Int>(0)
    /// Set by `stop()`: responses then carry `Connection: close` so keep-alive clients move on.
    let stopping = Atomic<Bool>(false)
    /// Connections suspended for a deferred response, answered by `stop()`.
    let deferreds = DeferredRegistry()
    /// The longest a deferred response may wait, whatever its handler asked.
    let maxDeferredWait: Duration

    init(
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse, maxBodyBytes: Int, lingering: LingeringCloser,
        maxDeferredWait: Duration
    ) {
        self.handler = handler
        self.maxBodyBytes = maxBodyBytes
        self.lingering = lingering
        self.maxDeferredWait = maxDeferredWait
    }
}

/// Per-request state kept in MHD's `*con_cls` from the request line until completion.
/// Only the one MHD thread serving the connection touches it.
final class RequestState {
    let target: String
    var started = false
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    var tooLarge = false
    /// Bytes of an oversize chunked body read and thrown away so far.
    var discarded = 0
    /// The handle of a deferred response while its connection is suspended; the access handler
    /// is called again after the resume and sends what it holds.
    var deferred: HTTPDeferred?
    /// The handler returned `deferred` unfinished and the connection is not suspended yet: MHD
    /// calls the access handler again at once, and that call suspends it (see `MHDCallbacks.access`).
    var suspendPending = false
    /// The request's id, for the `X-Request-Id` of a response sent after the handler returned.
    var requestId = ""

    init(target: String) {
        self.target = target
    }
}
