import Dispatch
import Synchronization

/// A fixed number of lazily opened connections shared by many threads.
///
/// Sized to the HTTP worker threads, a caller never waits, so the cost per call is one
/// uncontended semaphore and mutex (well under a microsecond against ~40 µs for a query).
/// A connection that broke (server restart, network) is discarded and the call fails with a
/// retryable `DatabaseError` (`isConnectionFailure`); the next call opens a new one, so the
/// process recovers without a restart once PostgreSQL is back.
public final class ConnectionPool: Sendable {
    /// Usage figures for `/metrics`.
    public struct Stats: Sendable, Equatable {
        /// Slots in the pool.
        public var size: Int
        /// Connections currently open.
        public var open: Int
        /// Slots currently handed out.
        public var inUse: Int
        /// Calls that found no free slot and had to wait (total since start).
        public var waits: Int
        /// Connections opened (total since start).
        public var connects: Int
        /// Connections thrown away because they broke (total since start).
        public var discards: Int
    }

    private struct State {
        var free: [Connection?]  // a stack of free slots; nil = not connected yet or discarded
        var stats: Stats
    }

    public let size: Int
    private let conninfo: String
    /// Role and settings of every connection, and the pool mode (PgBouncer transaction pooling or not).
    public let session: SessionSettings
    private let connectTimeout: Int
    private let acquireTimeout: Duration
    private let freeSlots: DispatchSemaphore
    private let state: Mutex<State>

    /// - Parameters:
    ///   - session: the role and settings every connection's transactions run with, applied by
    ///     `Connection` as its pool mode requires (once, or with every transaction).
    ///   - connectTimeout: seconds, unless `conninfo` sets `connect_timeout`.
    ///   - acquireTimeout: how long a caller waits for a free slot before a retryable `53300`.
    public init(
        conninfo: String, size: Int, session: SessionSettings = .direct, connectTimeout: Int = 5,
        acquireTimeout: Duration = .seconds(30)
    ) {
        precondition(size > 0, "pool size must be positive")
        self.size = size
        self.conninfo = conninfo
        self.session = session
        self.connectTimeout = connectTimeout
        self.acquireTimeout = acquireTimeout
        self.freeSlots = DispatchSemaphore(value: size)
        self.state = Mutex(
            State(
                free: Array(repeating: nil, count: size),
                stats: Stats(size: size, open: 0, inUse: 0, waits: 0, connects: 0, discards: 0)))
    }

    public var stats: Stats { state.withLock { $0.stats } }

    /// Lends a connection to `body`. Transactions left open by `body` are rolled back; broken
    /// connections are dropped. Errors from `body` are rethrown unchanged. Do not nest calls on
    /// one pool: the inner call may wait for a slot the outer one holds (then fails with 53300).
    public func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        try acquireSlot()
        var connection = state.withLock { state -> Connection? in
            state.stats.inUse += 1
            return state.free.removeLast()
        }
        if let existing = connection, !existing.isHealthy || existing.hasUnexpectedInput {
            connection = nil
            state.withLock {
                $0.stats.open -= 1
                $0.stats.discards += 1
            }
        }
        let lent: Connection
        if let connection {
            lent = connection
        } else {
            do {
                lent = try open()
            } catch {
                release(nil)
                throw error
            }
        }
        do {
            let value = try body(lent)
            release(lent)
            return value
        } catch {
            let broken = (error as? DatabaseError)?.isConnectionFailure ?? false
            release(broken ? nil : lent, discarding: broken ? lent : nil)
            throw error
        }
    }

    /// `withConnection` + `Connection.transaction`: one unit of work, committed or rolled back.
    @discardableResult
    public func withTransaction<T>(_ body: (Connection) throws -> T) throws -> T {
        try withConnection { connection in try connection.transaction(body) }
    }

    /// True when the server accepts connections right now (for `/readyz`); does not use a slot.
    public func ping(timeout seconds: Int = 2) -> Bool {
        Connection.ping(conninfo, timeout: seconds)
    }

    private func acquireSlot() throws(DatabaseError) {
        if freeSlots.wait(timeout: .now()) == .success { return }
        state.withLock { $0.stats.waits += 1 }
        let (secondsPart, attoseconds) = acquireTimeout.components
        let nanoseconds = Int(secondsPart) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        if freeSlots.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
            throw .poolExhausted("no database connection became free within \(acquireTimeout)")
        }
    }

    private func open() throws(DatabaseError) -> Connection {
        let connection = try Connection(conninfo, connectTimeout: connectTimeout, session: session)
        state.withLock {
            $0.stats.open += 1
            $0.stats.connects += 1
        }
        return connection
    }

    /// Returns the slot; a connection that is not clean and idle is dropped instead of pooled.
    private func release(_ connection: Connection?, discarding broken: Connection? = nil) {
        var keep = connection
        if let candidate = keep {
            candidate.rollbackIfNeeded()
            if !candidate.isHealthy || !candidate.isIdle { keep = nil }
        }
        let dropped = (connection != nil && keep == nil) || broken != nil
        state.withLock { state in
            state.free.append(keep)
            state.stats.inUse -= 1
            if dropped {
                state.stats.open -= 1
                state.stats.discards += 1
            }
        }
        freeSlots.signal()
    }
}
