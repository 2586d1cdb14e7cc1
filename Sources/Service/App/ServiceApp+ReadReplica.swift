import EventStore
import HTTP
import Infrastructure

extension ServiceApp {
    /// The pool on `DATABASE_READ_URL`: the same role and session settings as the primary's
    /// pool (one place, so a change to how sessions are set up reaches both). It connects and
    /// hands out slots quickly: a replica that is slow to answer costs a read its primary answer,
    /// not seconds.
    package static func makeReadPool(conninfo: String, options: Options) -> ConnectionPool {
        ConnectionPool(
            conninfo: conninfo, size: options.databaseConnections, session: serviceSession(options),
            connectTimeout: 2, acquireTimeout: .milliseconds(max(10, options.replicaWaitMillis)))
    }

    /// The routing of history reads to the replica, or nil without `DATABASE_READ_URL`. A replica
    /// unreachable at start is not an error: reads go to the primary until it answers.
    package static func makeReadRouting(_ options: Options, primary: ConnectionPool) throws(StartupError)
        -> ReadRouting?
    {
        guard let url = options.databaseReadURL else { return nil }
        let layout: WALLayout
        do {
            layout = try primary.withConnection { connection in try WALLayout.read(on: connection) }
        } catch {
            throw StartupError(description: "cannot read the primary's WAL settings: \(error)")
        }
        let replica = makeReadPool(conninfo: url, options: options)
        if !replica.ping(timeout: 2) {
            options.logger.warning("DATABASE_READ_URL is unreachable: history reads go to the primary until it answers")
        }
        return ReadRouting(
            replica: replica, primaryPosition: PrimaryWALPosition(pool: primary, layout: layout),
            maxWait: .milliseconds(options.replicaWaitMillis), logger: options.logger)
    }

    /// `iap_replica_reads_total{result}` and `iap_replica_replay_lag_bytes` (scrape time; no
    /// sample while the replica or the primary cannot be asked).
    package static func registerReplicaMetrics(_ routing: ReadRouting, on registry: MetricsRegistry) {
        registry.counter(
            "iap_replica_reads_total",
            help:
                "History reads by who answered: the replica, or the primary (fallback: replica behind, down or busy).",
            labels: ["result"]
        ) {
            let counts = routing.counts
            return [(["replica"], Double(counts.replica)), (["fallback"], Double(counts.fallback))]
        }
        registry.gauge(
            "iap_replica_replay_lag_bytes", help: "WAL bytes the primary has written that the replica has not replayed."
        ) {
            routing.replayLagBytes().map { [(labels: [], value: $0)] } ?? []
        }
    }
}
