import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd: a pool of worker threads (each polling its own connections) that run the
/// handler synchronously, with keep-alive, a body limit, a connection limit and timeouts.
/// A handler that must wait (a long poll) returns `HTTPResponse.deferred(_:)` instead of
/// blocking its worker: the connection is suspended until the handle completes.
public final class HTTPServer: Sendable {
    public let configuration: Configuration
    private let context: DaemonContext
    /// The daemon and the port it listens on, only touched under this lock.
    private let state = Mutex<Running?>(nil)

    private struct Running {
        nonisolated(unsafe) var daemon: OpaquePointer
        var port: Int
    }

    public init(configuration: Configuration, handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        self.configuration = configuration
        self.context = DaemonContext(
            handler: handler, maxBodyBytes: configuration.maxBodyBytes,
            lingering: LingeringCloser(
                seconds: configuration.lingeringCloseSeconds, bytes: configuration.lingeringCloseBytes,
                capacity: configuration.lingeringCloseConnections),
            maxDeferredWait: .milliseconds(Int(max(0, configuration.maxDeferredSeconds) * 1000)))
    }

    deinit {
        stop()
    }

    /// Binds, starts the workers and returns the port actually bound (useful with port 0).
    @discardableResult
    public func start() throws(HTTPServerError) -> Int {
        try state.withLock { (running: inout Running?) throws(HTTPServerError) -> Int in
            if let running { throw HTTPServerError(.alreadyStarted, "server already listens on port \(running.port)") }
            let c = configuration
            let (fd, port) = try ListenSocket.open(host: c.host, port: c.port, backlog: c.backlog)
            // ALLOW_SUSPEND_RESUME: deferred responses suspend their connection (ITC wakes the
            // worker on resume). POLL, not EPOLL: in epoll mode libmicrohttpd 0.9.75's
            // MHD_quiesce_daemon and a worker both take the listen socket out of the worker's
            // epoll set, unsynchronized, and the loser aborts the process (seen in CI,
            // reproduced by HTTPServerTests.stoppingWhileClientsKeepConnectingNeverAborts); in
            // poll mode quiesce is a flag the workers read. Each worker polls only its own
            // connections (suspended ones not at all), so poll's cost per wake-up stays small.
            let flags =
                MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue | MHD_USE_ITC.rawValue
                | MHD_ALLOW_SUSPEND_RESUME.rawValue
            let cls = Unmanaged.passUnretained(context).toOpaque()
            let daemon = CMHD_start_daemon(
                flags, fd,
                MHDCallbacks.access, cls,
                MHDCallbacks.completed, cls,
                MHDCallbacks.uriLog, cls,
                MHDCallbacks.connectionNotice, cls,
                UInt32(clamping: max(1, c.threadCount)),
                UInt32(clamping: max(1, c.connectionLimit)),
                UInt32(clamping: max(0, c.connectionTimeoutSeconds)),
                max(4096, c.maxHeaderBytes))
            guard let daemon else {
                // MHD may or may not have closed the socket on failure; a leaked fd beats a double close.
                throw HTTPServerError(.daemon, "libmicrohttpd refused to start on \(c.host):\(port)")
            }
            context.stopping.store(false, ordering: .relaxed)
            context.deferreds.reopen()
            context.lingering.start()
            running = Running(daemon: daemon, port: port)
            return port
        }
    }

    /// The bound port while running, else nil.
    public var port: Int? {
        state.withLock { $0?.port }
    }

    /// Requests currently being read, handled or answered (deferred ones waiting included).
    public var inFlightRequests: Int {
        context.liveRequests.load(ordering: .relaxed)
    }

    /// Requests whose connection is suspended waiting for their deferred response.
    public var deferredRequests: Int {
        context.deferreds.count
    }

    /// Graceful stop: refuse new connections at once, answer every waiting deferred request
    /// (long polls) 503 `shutting_down`, let in-flight requests finish (at most
    /// `shutdownGraceSeconds`; those on a HandlerPool too, then answered 503: MHD_stop_daemon
    /// must never meet a suspended connection), then close every connection and join the
    /// workers. Idempotent.
    public func stop() {
        state.withLock { running in
            guard let current = running else { return }
            running = nil
            context.stopping.store(true, ordering: .relaxed)
            let listenFD = MHD_quiesce_daemon(current.daemon)
            // Refuse new connections now (a shut-down listen socket resets them), but close the
            // descriptor only after MHD_stop_daemon: a worker may still be polling it.
            if listenFD >= 0 { shutdown(listenFD, Int32(SHUT_RDWR)) }
            // Long polls are answered now; requests whose handler runs on a HandlerPool get the
            // grace period to finish, like those on the workers.
            context.deferreds.close(sparingRunning: true)
            let deadline = ContinuousClock.now.advanced(
                by: .milliseconds(Int(configuration.shutdownGraceSeconds * 1000)))
            while context.liveRequests.load(ordering: .relaxed) > 0 && ContinuousClock.now < deadline {
                usleep(2_000)
            }
            // After this no connection is suspended, and none can be: handles returned from
            // now on are answered at once (resumed ones MHD_stop_daemon sends or closes).
            let overran = context.deferreds.count > 0
            context.deferreds.close()
            // Their 503s were just resumed: a moment for the workers to send them.
            let flush = ContinuousClock.now.advanced(by: .milliseconds(overran ? 500 : 0))
            while context.liveRequests.load(ordering: .relaxed) > 0 && ContinuousClock.now < flush { usleep(2_000) }
            MHD_stop_daemon(current.daemon)
            if listenFD >= 0 { close(listenFD) }
            context.lingering.stop()
        }
    }
}
