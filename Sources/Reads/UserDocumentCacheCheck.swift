import Dispatch
import EventStore
import Foundation
import Infrastructure
import Synchronization
import SystemCalls

/// Keeps a `UserDocumentCache` exact: asks PostgreSQL which user documents changed since its
/// previous check and drops them from the cache. Reads wait for a check that *started after
/// they did* (`awaitCheck`), so a write acknowledged by any process before a read began has
/// been seen. One check serves every read that arrived while the previous one was running:
/// under load that is one cheap indexed query for many reads instead of one query each.
///
/// Why a check sees every commit: each write of `proj.users` stamps the row with its
/// transaction id (`changed_tx`, migration 0016). Every transaction that commits after a
/// snapshot has an id at or above that snapshot's `xmin`, so the rows with
/// `changed_tx >= previous xmin` are a superset of what changed since the previous check.
/// A new `proj.users` table (a replay's swap) or a horizon that went backwards (a restored
/// database) drops everything.
package final class UserDocumentCacheCheck: @unchecked Sendable {
    private let conninfo: String
    private let session: SessionSettings
    package let cache: UserDocumentCache
    private let logger: Logger

    /// A blocking read (`awaitCheck`) waiting for a check. The blocking readers of one check are
    /// woken as a binary tree: the check thread wakes the first, each woken reader wakes its two
    /// children. Waking every reader from the check thread made it the bottleneck (one futex
    /// wake each, serially, on one core); the tree spreads the wake-ups over the readers' own
    /// threads.
    private final class Waiter: @unchecked Sendable {
        static let waiting = 0, woken = 1, abandoned = 2
        let done = DispatchSemaphore(value: 0)
        let state = Atomic<Int>(Waiter.waiting)
        // Written by the check thread before it wakes the tree; read after the wake-up.
        var children: [Waiter] = []
        var succeeded = false

        /// Wakes this reader, or, if it gave up waiting, passes the wake-up on to its children.
        func release() {
            if state.compareExchange(expected: Self.waiting, desired: Self.woken, ordering: .acquiringAndReleasing)
                .exchanged
            {
                done.signal()
                return
            }
            for child in children { child.release() }
        }
    }

    /// A read that holds no thread (`whenChecked`, every cached HTTP read): only its callback and
    /// deadline, no object, semaphore or atomic of its own (issue 39's profile: ~3.5 % of a
    /// cached read's samples went to those). It is answered exactly once by whoever takes it out
    /// of the queue under the queue's lock: the check thread after its check, or the sweep past
    /// the deadline.
    private struct Callback {
        let then: @Sendable (Bool) -> Void
        let deadline: UInt64
    }

    private struct Queue {
        /// Readers that arrived after the running check started: the next check is theirs.
        var pending: [Waiter] = []
        var pendingCallbacks: [Callback] = []
        /// The readers of the check running now (blocking ones only counted, for tests;
        /// callbacks kept for the sweep).
        var checking = 0
        var checkingCallbacks: [Callback] = []
        var checkIdle = false
        var running = true
    }

    private let queue = PlainMutex(Queue())
    /// Every 100 ms: `sweep`.
    private let sweeper = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "user-document-check.sweep"))
    private let work = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)

    // Only touched by the check thread.
    private var connection: Connection?
    private var horizon: UInt64?
    private var relation: String?
    /// Rows at or above the horizon come back on every check until it passes them; a row whose
    /// `changed_tx` was already applied is not dropped again (a reader may have cached it since).
    private var appliedAboveHorizon: [String: UInt64] = [:]
    private var failing = false

    package init(conninfo: String, session: SessionSettings, cache: UserDocumentCache, logger: Logger) {
        self.conninfo = conninfo
        self.session = session
        self.cache = cache
        self.logger = logger
        let thread = Thread { [self] in run() }
        thread.name = "user-document-check"
        thread.start()
        sweeper.setEventHandler { [weak self] in self?.sweep() }
        sweeper.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        sweeper.resume()
    }

    deinit {
        sweeper.cancel()
    }

    /// Readers the running check will answer, and readers queued for the next one: what a test
    /// polls to know its readers are in place.
    package var waiters: (checking: Int, pending: Int) {
        queue.withLock { ($0.checking + $0.checkingCallbacks.count, $0.pending.count + $0.pendingCallbacks.count) }
    }

    /// Blocks until a check that started after this call has been applied to the cache. False
    /// when none succeeded within `timeout` (PostgreSQL down or slow): then the caller must not
    /// use the cache for this read.
    package func awaitCheck(timeout: Duration = .seconds(2)) -> Bool {
        let waiter = Waiter()
        let wakeFeed = queue.withLock { queue -> Bool? in
            guard queue.running else { return nil }
            queue.pending.append(waiter)
            defer { queue.checkIdle = false }
            return queue.checkIdle
        }
        guard let wakeFeed else { return false }
        if wakeFeed { work.signal() }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        if waiter.done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
            let gaveUp = waiter.state.compareExchange(
                expected: Waiter.waiting, desired: Waiter.abandoned, ordering: .acquiringAndReleasing
            ).exchanged
            if gaveUp { return false }  // whoever wakes it wakes its children instead
            waiter.done.wait()  // woken just now: the signal is on its way
        }
        for child in waiter.children { child.release() }
        return waiter.succeeded
    }

    /// Calls `then` once a check that started after this call has been applied to the cache
    /// (true), or with false when none succeeded within `timeout`: on the check's thread (or the
    /// sweep's, past the deadline), so `then` must not block. No thread waits
    /// meanwhile: a read answered from memory costs no sleep and wake-up of its own.
    package func whenChecked(timeout: Duration = .seconds(2), _ then: @escaping @Sendable (Bool) -> Void) {
        let (seconds, attoseconds) = timeout.components
        let deadline =
            DispatchTime.now().uptimeNanoseconds + UInt64(seconds) * 1_000_000_000
            + UInt64(attoseconds / 1_000_000_000)
        let wakeFeed = queue.withLock { queue -> Bool? in
            guard queue.running else { return nil }
            queue.pendingCallbacks.append(Callback(then: then, deadline: deadline))
            defer { queue.checkIdle = false }
            return queue.checkIdle
        }
        guard let wakeFeed else { return then(false) }
        if wakeFeed { work.signal() }
    }

    /// Gives up the callback readers past their deadline (a check stuck on PostgreSQL): they
    /// read around the cache, like a blocking reader whose wait timed out.
    private func sweep() {
        let now = DispatchTime.now().uptimeNanoseconds
        let late = queue.withLock { queue -> [Callback] in
            let late = (queue.pendingCallbacks + queue.checkingCallbacks).filter { $0.deadline < now }
            if !late.isEmpty {
                queue.pendingCallbacks.removeAll { $0.deadline < now }
                queue.checkingCallbacks.removeAll { $0.deadline < now }
            }
            return late
        }
        for callback in late { callback.then(false) }
    }

    /// Stops the check thread (waiting readers answer false) and closes its connection.
    package func stop() {
        queue.withLock { $0.running = false }
        work.signal()
        _ = exited.wait(timeout: .now() + 5)
        sweeper.cancel()
    }

    /// Checks start at most this often. Back to back, under load, a check served about two
    /// reads and cost PostgreSQL ~17 µs of CPU per read; spaced 200–500 µs apart it serves 5–15
    /// and costs 5–10 µs per read, for at most this much added latency.
    package static let checkSpacingNanoseconds: UInt64 = 250_000

    private func run() {
        var lastStart: UInt64 = 0
        // The callback lists' buffers go round pending → checking → answered → pending, so a
        // check allocates none under load.
        var answering: [Callback] = []
        while true {
            let hasWork = queue.withLock { queue -> Bool? in
                guard queue.running else { return nil }
                let empty = queue.pending.isEmpty && queue.pendingCallbacks.isEmpty
                queue.checkIdle = empty
                return !empty
            }
            guard let hasWork else { break }
            guard hasWork else {
                _ = work.wait(timeout: .now() + 1)
                continue
            }
            let sinceLast = DispatchTime.now().uptimeNanoseconds &- lastStart
            if sinceLast < Self.checkSpacingNanoseconds {
                usleep(UInt32((Self.checkSpacingNanoseconds - sinceLast) / 1000))
            }
            let batch = queue.withLock { queue -> [Waiter] in
                defer { queue.pending.removeAll(keepingCapacity: true) }
                queue.checking = queue.pending.count
                swap(&queue.checkingCallbacks, &queue.pendingCallbacks)
                return queue.pending
            }
            // The check starts after every reader of the batch arrived.
            lastStart = DispatchTime.now().uptimeNanoseconds
            let succeeded = applyChanges()
            for (index, waiter) in batch.enumerated() {
                waiter.succeeded = succeeded
                waiter.children = Array(batch[min(batch.count, 2 * index + 1)..<min(batch.count, 2 * index + 3)])
            }
            batch.first?.release()
            queue.withLock { queue in
                queue.checking = 0
                swap(&answering, &queue.checkingCallbacks)
            }
            for callback in answering { callback.then(succeeded) }
            answering.removeAll(keepingCapacity: true)
        }
        connection = nil
        let (blocking, callbacks) = queue.withLock { queue in
            defer { queue.pendingCallbacks.removeAll() }
            return (queue.pending, queue.pendingCallbacks)
        }
        for waiter in blocking { waiter.release() }
        for callback in callbacks { callback.then(false) }
        exited.signal()
    }

    /// One check: drops what changed since the previous one. False when PostgreSQL could not
    /// answer (nothing is lost: the next check asks again from the same horizon).
    private func applyChanges() -> Bool {
        do throws(DatabaseError) {
            let connection: Connection
            if let open = self.connection {
                connection = open
            } else {
                connection = try connect()
                self.connection = connection
            }
            guard let previous = horizon else {
                let rows = try connection.query(UserDocumentsTable.horizon)
                guard let xmin = rows[0, 0].flatMap({ UInt64($0) }) else { return false }
                cache.invalidateAll()
                (horizon, relation) = (xmin, rows[0, 1])
                return recovered()
            }
            let rows = try connection.query(UserDocumentsTable.changes(since: previous))
            var changed: [(userId: String, tx: UInt64)] = []
            var newHorizon: UInt64?
            var newRelation: String?
            changed.reserveCapacity(rows.count)
            for row in 0..<rows.count {
                if let userId = rows[row, 0] {
                    changed.append((userId, rows[row, 1].flatMap { UInt64($0) } ?? 0))
                } else {
                    newHorizon = rows[row, 1].flatMap { UInt64($0) }
                    newRelation = rows[row, 2]
                }
            }
            guard let newHorizon else { return false }
            if newRelation != relation || newHorizon < previous {
                cache.invalidateAll()
                appliedAboveHorizon.removeAll()
            } else {
                cache.invalidate(changed.lazy.filter { self.appliedAboveHorizon[$0.userId] != $0.tx }.map(\.userId))
            }
            appliedAboveHorizon.removeAll(keepingCapacity: true)
            for change in changed where change.tx >= newHorizon { appliedAboveHorizon[change.userId] = change.tx }
            (horizon, relation) = (newHorizon, newRelation)
            return recovered()
        } catch {
            if error.isConnectionFailure { connection = nil }
            if !failing {
                failing = true
                logger.warning(
                    "user document cache: cannot check for changes; reads bypass the cache", ["error": "\(error)"])
            }
            return false
        }
    }

    private func recovered() -> Bool {
        if failing {
            failing = false
            logger.info("user document cache: checks succeed again")
        }
        return true
    }

    private func connect() throws(DatabaseError) -> Connection {
        try Connection(conninfo, connectTimeout: 2, session: session)
    }
}
