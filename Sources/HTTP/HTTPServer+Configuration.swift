extension HTTPServer {
    /// How the server listens and what it accepts.
    public struct Configuration: Sendable {
        /// The address to bind: an IPv4 or IPv6 literal, or "localhost". Never all interfaces by accident.
        public var host: String = "127.0.0.1"
        /// 0 picks a free port; `start()` returns the real one.
        public var port: Int = 0
        /// MHD worker threads; handlers run on them, synchronously, unless the router hands
        /// them to a `HandlerPool`. A request whose handler returned a deferred response holds
        /// no thread while it waits.
        public var threadCount: Int = 4
        /// Open connections beyond this are refused by MHD. Connections suspended for a deferred
        /// response (long polls) count too, so this leaves room for 1,000+ waiters beside normal
        /// traffic. MHD splits it evenly between the worker threads; each needs a descriptor,
        /// so the process's open-file limit must be above it (`OpenFileLimit.raiseToHard()`).
        public var connectionLimit: Int = 4096
        /// An idle (or stalled) connection is closed after this many seconds. MHD does not time
        /// out a suspended (deferred) connection; its clock restarts when it is resumed.
        public var connectionTimeoutSeconds: Int = 30
        /// The longest a deferred response may wait, whatever timeout its handler asked for: a
        /// suspended connection is neither polled nor timed out by MHD, so this is the backstop.
        public var maxDeferredSeconds: Double = 120
        /// Request bodies past this answer 413 (by `Content-Length` before reading, or after a chunked upload).
        public var maxBodyBytes: Int = 1 << 20
        /// MHD's per-connection memory pool, which the request line and headers must fit in;
        /// a larger request head is refused by MHD itself (431/414).
        public var maxHeaderBytes: Int = 32 * 1024
        /// After refusing a request whose body or head was still arriving (413, 431, 400), the
        /// server keeps reading and discarding input for at most this long before it closes, so
        /// that the client is not reset before it reads the answer (nginx's lingering close).
        public var lingeringCloseSeconds: Double = 5
        /// … and for at most this many bytes.
        public var lingeringCloseBytes: Int = 16 << 20
        /// Connections lingering at once; past this a refused connection is closed at once.
        public var lingeringCloseConnections: Int = 256
        /// `stop()` waits at most this long for in-flight requests before closing everything.
        public var shutdownGraceSeconds: Double = 10
        /// The listen backlog.
        public var backlog: Int = 1024

        public init(host: String = "127.0.0.1", port: Int = 0) {
            self.host = host
            self.port = port
        }
    }
}
