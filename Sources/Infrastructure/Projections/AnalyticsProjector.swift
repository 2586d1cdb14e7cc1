import EventStore
import Foundation
import JSON
import Ledger
import Synchronization

/// Keeps the `analytics` tables caught up with the log on a background thread: each step is one
/// call of `analytics.catch_up` (set-based SQL over the next batch of events below the xid
/// horizon; the checkpoint moves in the same transaction, `synchronous_commit = off`). Among
/// several service instances one runs it: the holder of the `analytics-projector` lease. Two
/// overlapping (a holder stalled past its lease) cannot apply a batch twice: `catch_up` takes
/// the checkpoint row FOR UPDATE and moves it in the same transaction, so the second waits and
/// goes on from where the first committed (a compare-and-set checkpoint).
package final class AnalyticsProjector: Sendable {
    package static let checkpointName = "analytics"
    /// A row of es.checkpoints under this name asks for a rebuild (see `requestRebuild`).
    package static let rebuildRequestName = "analytics:rebuild"
    package static let leaseName = "analytics-projector"

    package let conninfo: String
    package let session: SessionSettings
    package let catalog: Catalog
    /// Each configured app's commission program, published to `analytics.apps`.
    package let commissions: [String: Configuration.Commission]
    package let logger: Logger
    package let interval: Double
    package let batchSize: Int
    package let lease: Lease

    package init(
        conninfo: String, catalog: Catalog, commissions: [String: Configuration.Commission] = [:], logger: Logger,
        leases: LeaseHolder, interval: Double = 0.25, batchSize: Int = 20_000, poolMode: PoolMode = .session
    ) {
        self.conninfo = conninfo
        self.session = ServiceRole.session(poolMode)
        self.catalog = catalog
        self.commissions = commissions
        self.logger = logger
        lease = leases.lease(Self.leaseName)
        self.interval = interval
        self.batchSize = batchSize
    }

    /// The projector as a background job (JobRunner), run by the holder of its lease. Every
    /// instance publishes its catalog and commissions once per connection, lease or not.
    package func makeJob() -> BackgroundJob {
        BackgroundJob(
            name: Self.leaseName, interval: interval, holder: .leaseHolder(lease),
            connections: .dedicated(
                conninfo: conninfo, session: session,
                prepare: { [catalog, commissions] connection in
                    try Self.publish(catalog, on: connection)
                    try Self.publish(commissions, on: connection)
                })
        ) { [self] connection, round in
            if try Self.rebuildRequested(on: connection) {
                // One long transaction: the lease is renewed beside it, not inside it.
                let applied = try lease.renewing { try Self.rebuild(on: connection, limit: batchSize) }
                logger.info("analytics rebuilt side by side", ["events": String(applied)])
            }
            while !round.shouldStop(), try Self.step(limit: batchSize, on: connection) > 0 {}
        }
    }

    /// One batch; answers the number of events applied (0: caught up).
    @discardableResult
    package static func step(limit: Int, on connection: Connection) throws(DatabaseError) -> Int {
        let rows = try connection.query("SELECT analytics.catch_up($1::integer) AS n", [String(limit)])
        return Int(rows.int64(0, "n") ?? 0)
    }

    /// Runs batches until caught up; answers the events applied.
    package static func catchUp(on connection: Connection, limit: Int = 20_000) throws(DatabaseError) -> Int {
        var total = 0
        while true {
            let applied = try step(limit: limit, on: connection)
            total += applied
            if applied == 0 { return total }
        }
    }

    /// Asks whichever instance runs the projector to rebuild the tables from the whole log (a
    /// replay, a projection version bump). A row in the database rather than a call: the replay
    /// may run in a CLI process that exits at once, and the projector may run in another
    /// instance. Until the rebuild commits, analysts keep reading the old rows.
    package static func requestRebuild(on connection: Connection) throws(DatabaseError) {
        try connection.execute(
            """
            INSERT INTO es.checkpoints (name) VALUES ($1)
            ON CONFLICT ON CONSTRAINT checkpoints_pkey DO UPDATE SET updated_at = now()
            """, [rebuildRequestName])
    }

    package static func rebuildRequested(on connection: Connection) throws(DatabaseError) -> Bool {
        !(try connection.query("SELECT 1 FROM es.checkpoints WHERE name = $1", [rebuildRequestName])).isEmpty
    }

    /// Where the tables stand: the start of the log while a rebuild is pending (its lag is the
    /// whole log), else the checkpoint.
    package static func position(on connection: Connection) throws(DatabaseError) -> Checkpoint {
        if try rebuildRequested(on: connection) { return .start }
        return try EventStore().loadCheckpoint(name: checkpointName, on: connection)
    }

    /// Empties every table `catch_up` writes and forgets its checkpoint (and a pending rebuild
    /// request): the start of a rebuild, and of the bench's catch-up measure.
    package static let emptying = """
        DELETE FROM analytics.transactions;
        DELETE FROM analytics.renewal_infos;
        DELETE FROM analytics.chain_owners;
        DELETE FROM analytics.notifications;
        DELETE FROM analytics.balance_movements;
        DELETE FROM analytics.transaction_versions;
        DELETE FROM analytics.renewal_info_versions;
        DELETE FROM analytics.exchange_rates;
        DELETE FROM es.checkpoints WHERE name IN ('analytics', 'analytics:rebuild');
        """

    /// Rebuilds the analytics tables from the whole log in one transaction, so an analyst never
    /// sees them empty or half filled: DELETE (not TRUNCATE, whose lock would block every reader)
    /// leaves the old rows visible to other snapshots until the rebuilt ones commit in their place.
    /// The background projector waits on the checkpoint row meanwhile and then goes on from the
    /// new checkpoint. Runs on the projector's thread when a rebuild was requested; answers the
    /// events applied.
    @discardableResult
    package static func rebuild(on connection: Connection, limit: Int = 20_000) throws(DatabaseError) -> Int {
        do {
            try connection.executeScript(
                """
                BEGIN;
                SET LOCAL synchronous_commit = on;
                -- The checkpoint row first, as catch_up takes it: a running step finishes before us.
                SELECT 1 FROM es.checkpoints WHERE name = 'analytics' FOR UPDATE;
                """ + emptying)
            let applied = try catchUp(on: connection, limit: limit)
            try connection.executeScript("COMMIT")
            return applied
        } catch {
            try? connection.executeScript("ROLLBACK")  // leave the connection usable
            throw error
        }
    }

    /// Publishes the configured catalog to `analytics.products` (the balance ledger uses its
    /// grants, `analytics.billing_period` its periods).
    package static func publish(_ catalog: Catalog, on connection: Connection) throws(DatabaseError) {
        let ids = catalog.products.keys.sorted()
        let types = ids.map { catalog.products[$0]!.type.rawValue }
        let entitlements = ids.map { PostgresArray.literal(catalog.products[$0]!.entitlements) }
        let grants = ids.map { id -> String in
            var w = JSONWriter()
            w.beginObject()
            for (currency, amount) in catalog.products[id]!.grants.sorted(by: { $0.key < $1.key }) {
                w.key(currency)
                w.int(amount)
            }
            w.endObject()
            return String(decoding: w.bytes, as: UTF8.self)
        }
        let periods = ids.map { catalog.products[$0]!.period?.rawValue }
        try connection.executeScript("BEGIN")
        do {
            try connection.execute(
                "DELETE FROM analytics.products WHERE NOT (product_id = ANY($1::text[]))", [PostgresArray.literal(ids)])
            if !ids.isEmpty {
                try connection.execute(
                    """
                    INSERT INTO analytics.products (product_id, type, entitlements, grants, period, updated_at)
                    SELECT p, t, e::text[], g::jsonb, pe, now()
                    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS x(p, t, e, g, pe)
                    ON CONFLICT (product_id) DO UPDATE SET type = excluded.type, entitlements = excluded.entitlements,
                        grants = excluded.grants, period = excluded.period, updated_at = now()
                    """,
                    [
                        PostgresArray.literal(ids), PostgresArray.literal(types), PostgresArray.literal(entitlements),
                        PostgresArray.literal(grants), PostgresArray.literal(periods),
                    ])
            }
            try connection.executeScript("COMMIT")
        } catch {
            try? connection.executeScript("ROLLBACK")
            throw error
        }
    }

    /// Publishes each configured app's commission program to `analytics.apps`, which
    /// `analytics.revenue_movements` reads (an app no longer configured keeps its last row: its
    /// past movements still need a rate).
    package static func publish(_ commissions: [String: Configuration.Commission], on connection: Connection)
        throws(DatabaseError)
    {
        guard !commissions.isEmpty else { return }
        let ids = commissions.keys.sorted()
        try connection.execute(
            """
            INSERT INTO analytics.apps (bundle_id, commission, updated_at)
            SELECT b, c, now() FROM unnest($1::text[], $2::text[]) AS x(b, c)
            ON CONFLICT (bundle_id) DO UPDATE SET commission = excluded.commission, updated_at = now()
            """,
            [PostgresArray.literal(ids), PostgresArray.literal(ids.map { commissions[$0]!.rawValue })])
    }
}
