import CMicroHTTPD
import SystemCalls

/// The server's suspended connections, so that `stop()` can answer every one before
/// `MHD_stop_daemon` (which aborts the process when it finds a connection still suspended).
final class DeferredRegistry: Sendable {
    private struct State {
        var waiting: [ObjectIdentifier: HTTPDeferred] = [:]
        /// Set by `stop()`: handles returned from now on are answered at once, never suspended.
        var closed = false
        /// Set by `close(sparingRunning: true)`: pool handlers may still suspend until the final close.
        var sparing = false
    }

    /// Every deferred request takes it twice (suspended by its MHD worker, forgotten by
    /// whoever completes it), from several threads at once: a plain mutex, not
    /// Synchronization's spinning priority-inheritance one (PlainMutex says why).
    private let state = PlainMutex(State())

    /// Suspended requests right now.
    var count: Int { state.withLock { $0.waiting.count } }

    /// Suspends `connection` for `deferred` (access handler, MHD thread), or returns the answer
    /// to queue now: the handle was completed first, or the server is stopping. The registry
    /// lock is held across the suspend, so `close()` either sees the handle suspended (and
    /// resumes it) or the handle sees the registry closed: no suspended connection escapes it.
    func suspend(_ deferred: HTTPDeferred, _ connection: OpaquePointer, context: DaemonContext, maxWait: Duration)
        -> HTTPDeferred.Attachment
    {
        state.withLock { state in
            if state.closed && !(state.sparing && deferred.runsToCompletion) {
                deferred.complete(Self.shuttingDown)
                return deferred.attach(connection, context: context, maxWait: maxWait)
            }
            let attachment = deferred.attach(connection, context: context, maxWait: maxWait)
            if case .suspended = attachment { state.waiting[ObjectIdentifier(deferred)] = deferred }
            return attachment
        }
    }

    /// A handle ended after it was suspended (its connection is already resumed).
    func forget(_ deferred: HTTPDeferred) {
        _ = state.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(deferred)) }
    }

    /// Refuses further suspends and answers every waiter 503, resuming its connection; with
    /// `sparingRunning`, not those whose owner is still working on the answer (pool handlers:
    /// `stop()` gives them the grace period, then calls this again without it).
    func close(sparingRunning: Bool = false) {
        let waiting = state.withLock { state in
            state.closed = true
            state.sparing = sparingRunning
            let ending = state.waiting.filter { !sparingRunning || !$0.value.runsToCompletion }
            for key in ending.keys { state.waiting.removeValue(forKey: key) }
            return Array(ending.values)
        }
        for deferred in waiting { deferred.complete(Self.shuttingDown) }
    }

    /// For a server started again after `stop()`.
    func reopen() {
        state.withLock {
            $0.closed = false
            $0.sparing = false
        }
    }

    /// Built once: every deferred request without a timeout carries it as its answer should
    /// the server stop first, and building a problem document per request cost ~3 % of a cached
    /// read's CPU (issue 39's profile of `GET /v1/users/{id}`).
    static let shuttingDown: HTTPResponse = {
        var response = HTTPResponse.problem(
            status: 503, code: "shutting_down", title: "Service Unavailable",
            detail: "The server is stopping; retry the request.")
        response.headers["Retry-After"] = "1"
        return response
    }()
}
