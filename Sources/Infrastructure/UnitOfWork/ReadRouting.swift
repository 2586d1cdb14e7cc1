import EventStore
import Foundation
import Synchronization

/// Sends history reads (`DATABASE_READ_URL`) to a streaming replica, but only once the replica
/// has replayed everything the read must see: the primary's WAL position taken after the read
/// began covers every write acknowledged before it (the caller's own included), so the read
/// waits — at most `maxWait` — for `pg_last_wal_replay_lsn()` to reach it, else it is answered
/// by the primary. A replica that is down, not a standby, or in a recovery conflict costs the
/// read nothing but the primary's answer (and a warning, once per outage).
///
/// Replay makes a commit visible to new snapshots before `pg_last_wal_replay_lsn()` moves past
/// its record, and statements on the connection that saw the position take their snapshots
/// after it, so each of them sees at least what the primary had when the read began.
package final class ReadRouting: Sendable {
    package enum Outcome: Sendable {
        case replica, fallback
    }

    package let replica: ConnectionPool
    package let primaryPosition: PrimaryWALPosition
    /// How long a read waits for the replica to replay its position.
    package let maxWait: Duration
    private let logger: Logger
    private let replicaReads = Atomic<Int>(0)
    private let fallbacks = Atomic<Int>(0)
    private let health = Mutex(Health())

    private struct Health {
        /// While set and in the future, reads skip the replica (it just failed to connect).
        var skipUntil: ContinuousClock.Instant?
        var reportedDown = false
        var reportedNotStandby = false
    }

    /// After the replica refused a connection, it is left alone this long: a dead replica must
    /// not add a connect attempt to every read.
    package static let retryInterval: Duration = .seconds(2)

    package init(replica: ConnectionPool, primaryPosition: PrimaryWALPosition, maxWait: Duration, logger: Logger) {
        self.replica = replica
        self.primaryPosition = primaryPosition
        self.maxWait = maxWait
        self.logger = logger
    }

    /// Reads served by the replica and by the primary instead, for `iap_replica_reads_total`.
    package var counts: (replica: Int, fallback: Int) {
        (replicaReads.load(ordering: .relaxed), fallbacks.load(ordering: .relaxed))
    }

    /// `body` on a replica connection that has replayed everything acknowledged before this call,
    /// or nil when the caller must read on the primary. The errors `body` throws as answers
    /// (not found, bad input) are rethrown; its database failures mean "ask the primary".
    package func read<T>(_ body: (Connection) throws(ServiceError) -> T) throws(ServiceError) -> T? {
        guard shouldTry() else { return fellBack() }
        let target: WALPosition
        do {
            target = try primaryPosition.current()
        } catch {
            // The primary is unreachable: its own read answers 503, as without a replica.
            return fellBack()
        }
        do {
            let value = try replica.withConnection { connection -> T? in
                guard try replayed(target, on: connection) else { return nil }
                do throws(ServiceError) {
                    return try body(connection)
                } catch {
                    throw ServiceErrorBox(error: error)
                }
            }
            replicaIsUp()
            guard let value else { return fellBack() }
            replicaReads.add(1, ordering: .relaxed)
            return value
        } catch let box as ServiceErrorBox {
            // `body` maps database failures: lost connection → storeUnavailable, the rest (a
            // recovery conflict, a read-only refusal) → internalError. Both are the replica's
            // trouble, answered by the primary; anything else is the read's answer.
            switch box.error {
            case .storeUnavailable(let message):
                return replicaFailed(DatabaseError(sqlState: "08006", message: message))
            case .internalError(let message), .conflict(let message):
                return replicaFailed(DatabaseError(sqlState: "XX000", message: message))
            default:
                throw box.error
            }
        } catch let error as DatabaseError {
            return replicaFailed(error)
        } catch {
            throw .internalError("\(error)")
        }
    }

    /// Waits until the replica behind `connection` has replayed `target`, for at most `maxWait`.
    private func replayed(_ target: WALPosition, on connection: Connection) throws(DatabaseError) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + maxWait
        var pause: UInt32 = 200
        while true {
            guard let position = try Self.replayPosition(on: connection) else {
                reportNotStandby()
                return false
            }
            if position >= target { return true }
            if clock.now >= deadline { return false }
            usleep(pause)
            pause = min(pause * 2, 5_000)
        }
    }

    /// The replica's replay position; nil when the server is not in recovery (a primary: its
    /// data need not be the primary's, so it is never read from as a replica).
    package static func replayPosition(on connection: Connection) throws(DatabaseError) -> WALPosition? {
        let rows = try connection.query("SELECT pg_last_wal_replay_lsn()::text, pg_is_in_recovery()")
        guard rows.count == 1, rows[0, 1] == "t", let text = rows[0, 0] else { return nil }
        return WALPosition(text)
    }

    /// Bytes of WAL the primary has that the replica has not replayed (`iap_replica_replay_lag_bytes`);
    /// nil when either cannot be asked.
    package func replayLagBytes() -> Double? {
        guard let head = try? primaryPosition.current(),
            let replayed = try? replica.withConnection({ connection in try Self.replayPosition(on: connection) })
        else { return nil }
        return head.offset > replayed.offset ? Double(head.offset - replayed.offset) : 0
    }

    private func shouldTry() -> Bool {
        health.withLock { health in
            guard let until = health.skipUntil else { return true }
            if ContinuousClock().now >= until {
                health.skipUntil = nil
                return true
            }
            return false
        }
    }

    private func fellBack<T>() -> T? {
        fallbacks.add(1, ordering: .relaxed)
        return nil
    }

    private func replicaFailed<T>(_ error: DatabaseError) -> T? {
        if error.isConnectionFailure {
            let first = health.withLock { health -> Bool in
                health.skipUntil = ContinuousClock().now + Self.retryInterval
                defer { health.reportedDown = true }
                return !health.reportedDown
            }
            if first {
                logger.warning("replica unavailable: history reads go to the primary", ["error": error.message])
            }
        } else {
            // A recovery conflict (40001), a full replica pool (53300), a timeout: this read only.
            logger.info(
                "replica read failed: answered by the primary", ["error": error.message, "sqlstate": error.sqlState])
        }
        return fellBack()
    }

    private func replicaIsUp() {
        let recovered = health.withLock { health -> Bool in
            defer { health.reportedDown = false }
            return health.reportedDown
        }
        if recovered { logger.info("replica reachable again: history reads go to it") }
    }

    private func reportNotStandby() {
        let first = health.withLock { health -> Bool in
            defer { health.reportedNotStandby = true }
            return !health.reportedNotStandby
        }
        if first {
            logger.warning("DATABASE_READ_URL is not a standby in recovery: history reads go to the primary")
        }
    }
}

extension LedgerService {
    /// A history read (`/events`, `asOf`, subscriptions, the change feed): on the replica when
    /// one is configured and has replayed what the read must see, else like `read`.
    package func historyRead<T>(_ body: (Connection) throws(ServiceError) -> T) throws(ServiceError) -> T {
        if let replica = readRouting, let value = try replica.read(body) { return value }
        return try read(body)
    }
}
