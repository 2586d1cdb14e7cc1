import CMicroHTTPD
import Dispatch
import Glibc
import Synchronization

/// A response a handler gives later (a long poll): return `HTTPResponse.deferred(handle)` from
/// the handler, keep `handle`, and call `complete(_:)` once from any thread when the answer is
/// known. Meanwhile the server suspends the connection (`MHD_suspend_connection`): no worker
/// thread is held, the socket is not even polled, and the waiter costs only its connection's
/// memory. On completion the connection is resumed and the response sent on a worker thread.
///
/// Every handle ends, exactly once, with the first of: `complete(_:)`, its timeout (it then
/// answers `timeoutResponse`), or the server's `stop()` (503 `shutting_down`). A suspended
/// connection never times out in MHD and `MHD_stop_daemon` must not see one, so the handle's
/// own deadline (capped by `Configuration.maxDeferredSeconds`) is what guarantees nothing waits
/// forever. A client that hangs up while suspended is only noticed once the connection is
/// resumed (MHD does not poll it): completing such a handle is harmless, the answer is dropped.
public final class HTTPDeferred: Sendable {
    /// How long the server lets the request wait before it answers `timeoutResponse` itself;
    /// nil for a handle its owner always completes (`HandlerPool`'s): no deadline is armed.
    public let timeout: Duration?
    public let timeoutResponse: HTTPResponse
    /// A handle whose owner is working on the answer (a handler on `HandlerPool`), not waiting
    /// for an event: `stop()` lets it finish within the grace period instead of answering it
    /// 503 at once, as it does a long poll.
    let runsToCompletion: Bool

    private enum Phase {
        /// The handler returned it; the server has not taken it yet (or it is not returned yet).
        case waiting
        /// The connection is suspended; `complete` resumes it (the pointer stays valid while
        /// suspended, as MHD frees no suspended connection short of `MHD_stop_daemon`).
        case suspended(SuspendedConnection, DaemonContext)
        /// Completed: the response waits for its worker thread (or for the server to take it).
        case ready(HTTPResponse)
        /// Handed to MHD (or dropped with a connection that went away).
        case delivered
    }

    /// MHD's connection, touched only under the handle's lock (to resume it).
    private struct SuspendedConnection: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private struct State {
        var phase = Phase.waiting
        /// Applied in order to the completing response (the router's metrics, the service's stamps).
        var transforms: [@Sendable (HTTPResponse) -> HTTPResponse] = []
        nonisolated(unsafe) var timer: DispatchSourceTimer?
    }

    private let state = Mutex(State())
    /// True while a `complete` resumes the connection it found suspended. The resume runs after
    /// the lock is released: MHD_resume_connection wakes the worker, whose `take()` wants this
    /// lock at once, and with the resume inside it the worker spun in `_lockSlow` (~1.3 % of a
    /// cached read's samples). A `complete` that finds the handle ended waits for this to clear,
    /// so `stop()`'s sweep still never returns before the connection is resumed.
    private let resuming = Atomic<Bool>(false)

    /// One serial queue for every handle's deadline timer: expiring only flips a state and
    /// signals MHD, so one thread is plenty.
    private static let deadlines = DispatchQueue(label: "http.deferred-deadlines")

    /// - Parameters:
    ///   - timeout: how long to wait at most (the server caps it at `maxDeferredSeconds`).
    ///   - timeoutResponse: the answer when nothing completed it in time (e.g. an empty page).
    public init(timeout: Duration, timeoutResponse: HTTPResponse) {
        self.timeout = timeout
        var response = timeoutResponse
        response.deferred = nil
        self.timeoutResponse = response
        self.runsToCompletion = false
    }

    /// A handle with no deadline, for an owner that completes every handle it makes, soon
    /// (a handler on `HandlerPool`, a read waiting for its cache check, which has a deadline of
    /// its own); `stop()` answers it 503 only once the grace period is over.
    public init(completedByOwner: Void) {
        self.timeout = nil
        self.timeoutResponse = DeferredRegistry.shuttingDown
        self.runsToCompletion = true
    }

    deinit {
        state.withLock { $0.timer?.cancel() }
    }

    /// Answers the request with `response`. Safe from any thread, at any time: before the
    /// server suspended the connection (the answer then goes out without suspending), while
    /// suspended, or after the client left. Returns false when the handle had already ended
    /// (completed, timed out, or answered 503 by `stop()`): `response` is then not sent.
    @discardableResult
    public func complete(_ response: HTTPResponse) -> Bool {
        var response = response
        response.deferred = nil  // a deferred answer to a deferred request would never end
        let (won, suspended) = state.withLock {
            state -> (Bool, (connection: SuspendedConnection, context: DaemonContext)?) in
            let suspended: (connection: SuspendedConnection, context: DaemonContext)?
            switch state.phase {
            case .ready, .delivered:
                return (false, nil)
            case .waiting:
                suspended = nil
            case .suspended(let connection, let context):
                suspended = (connection, context)
                resuming.store(true, ordering: .relaxed)
            }
            for transform in state.transforms { response = transform(response) }
            state.transforms = []
            state.timer?.cancel()
            state.timer = nil
            state.phase = .ready(response)
            return (true, suspended)
        }
        guard won else {
            // Lost to a `complete` that may still be resuming: once this returns, the connection
            // is resumed (what `stop()` relies on before `MHD_stop_daemon`).
            while resuming.load(ordering: .acquiring) { sched_yield() }
            return false
        }
        guard let suspended else { return true }
        MHD_resume_connection(suspended.connection.pointer)
        resuming.store(false, ordering: .releasing)
        suspended.context.deferreds.forget(self)
        return true
    }

    /// True once the handle has ended (completed, timed out or answered by `stop()`): a waiter
    /// list can drop it.
    public var isCompleted: Bool {
        state.withLock {
            switch $0.phase {
            case .waiting, .suspended: false
            case .ready, .delivered: true
            }
        }
    }

    /// Registers a step applied to the final response when it completes (before it is stored),
    /// so layers around the handler see the real answer: the router times and counts the
    /// request at completion, not when the handler returned the placeholder. On a handle
    /// already completed it applies at once.
    public func whenCompleted(_ transform: @escaping @Sendable (HTTPResponse) -> HTTPResponse) {
        state.withLock { state in
            switch state.phase {
            case .waiting, .suspended:
                state.transforms.append(transform)
            case .ready(let response):
                state.phase = .ready(transform(response))
            case .delivered:
                break
            }
        }
    }

    /// What `attach` did: the connection is suspended, or the answer is already there.
    enum Attachment {
        case suspended
        case ready(HTTPResponse)
    }

    /// On the MHD thread, inside the access handler (the only place MHD allows suspending):
    /// suspends the connection unless the handle was completed first, and arms the deadline.
    func attach(_ connection: OpaquePointer, context: DaemonContext, maxWait: Duration) -> Attachment {
        state.withLock { state in
            switch state.phase {
            case .ready(let response):
                state.phase = .delivered
                return .ready(response)
            case .waiting:
                MHD_suspend_connection(connection)
                state.phase = .suspended(SuspendedConnection(pointer: connection), context)
                // Armed already when the server put off the suspend by one call (MHDCallbacks).
                if state.timer == nil { state.timer = deadlineTimer(maxWait: maxWait) }
                return .suspended
            case .suspended, .delivered:
                preconditionFailure("an HTTPDeferred was returned by two requests")
            }
        }
    }

    /// Arms the deadline of a handle no connection will attach (a deferred answer of a handler
    /// that ran on `HandlerPool`, which waits for it instead), or not yet (the server suspends
    /// one call after the handler returned), so that it still ends.
    func armDeadline(maxWait: Duration) {
        state.withLock { state in
            guard case .waiting = state.phase, state.timer == nil else { return }
            state.timer = deadlineTimer(maxWait: maxWait)
        }
    }

    /// The timer that answers `timeoutResponse` at the deadline; nil for a handle without one.
    private func deadlineTimer(maxWait: Duration) -> DispatchSourceTimer? {
        guard let timeout else { return nil }
        let timer = DispatchSource.makeTimerSource(queue: Self.deadlines)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            self.complete(self.timeoutResponse)
        }
        timer.schedule(deadline: .now() + min(max(timeout, .zero), maxWait).dispatchInterval)
        timer.resume()
        return timer
    }

    /// On the MHD thread after the resume: the stored answer, once.
    func take() -> HTTPResponse? {
        state.withLock { state in
            guard case .ready(let response) = state.phase else { return nil }
            state.phase = .delivered
            return response
        }
    }
}

extension HTTPResponse {
    /// The placeholder a handler returns to answer later through `deferred`. Its own status
    /// and body are never sent.
    public static func deferred(_ deferred: HTTPDeferred) -> HTTPResponse {
        var response = HTTPResponse(status: 0)
        response.deferred = deferred
        return response
    }
}

extension Duration {
    fileprivate var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(clamping: seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }
}
