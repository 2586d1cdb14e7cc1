import EventStore
import HTTP

/// Where each projection stands in the log and how many events it is behind: the answer of
/// `GET /v1/admin/projections` (AdminProjectionsDocument) and the `iap_projection_lag_events` metric.
package enum ProjectionLag {
    /// Where a projection stands and how many events it is behind. Inline projections are
    /// written with the events, so they stand at the head once built at the current version.
    package static func position(
        of definition: ProjectionVersions.Definition, stored: (tx: String, seq: Int64)?, headSeq: Int64,
        on connection: Connection
    ) throws(DatabaseError) -> (position: Int64, lag: Int64) {
        if definition.inline {
            return stored == nil ? (0, try lag(after: .start, on: connection)) : (headSeq, 0)
        }
        let checkpoint = try AnalyticsProjector.position(on: connection)
        return (checkpoint.seq, try lag(after: checkpoint, on: connection))
    }

    /// The newest event's sequence number (0 for an empty log).
    package static func headSeq(on connection: Connection) throws(DatabaseError) -> Int64 {
        try connection.query("SELECT coalesce(max(seq), 0) AS seq FROM es.events").int64(0, "seq") ?? 0
    }

    /// Events after `checkpoint` in `(tx, seq)` order.
    package static func lag(after checkpoint: Checkpoint, on connection: Connection) throws(DatabaseError) -> Int64 {
        let rows = try connection.query(
            "SELECT count(*) AS n FROM es.events WHERE (tx, seq) > ($1::xid8, $2::bigint)",
            [String(checkpoint.tx), String(checkpoint.seq)])
        return rows.int64(0, "n") ?? 0
    }
}

extension ProjectionLag {
    /// `iap_projection_lag_events{projection}`, taken at scrape time (empty when the store is down).
    package static func register(pool: ConnectionPool, on registry: MetricsRegistry) {
        registry.gauge(
            "iap_projection_lag_events", help: "Events in the log a projection has not applied yet.",
            labels: ["projection"]
        ) {
            (try? pool.withConnection { connection in
                let head = try headSeq(on: connection)
                let stored = try ProjectionVersions.stored(on: connection)
                return try ProjectionVersions.all.map { definition in
                    let lag = try position(
                        of: definition, stored: stored[definition.name].map { ($0.tx, $0.seq) }, headSeq: head,
                        on: connection
                    ).lag
                    return (labels: [definition.name], value: Double(lag))
                }
            }) ?? []
        }
    }
}
