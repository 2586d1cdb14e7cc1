import EventStore
import Foundation
import Infrastructure
import JSON
import Ledger
import Synchronization

/// Rebuilds the `users` projection (`proj.users` + `proj.chain_owners`) from the whole log:
/// fold in memory, load fresh tables (COPY, indexes after), catch up, compare with the live
/// tables, swap in one transaction under the writers' table locks. See `run`.
public final class ReplayEngine: Sendable {
    package let conninfo: String
    package let catalog: Catalog
    /// The recorded catalog in force, read when a run starts (nil: `catalog`, unchecked, for
    /// benchmarks). A run renders under it and swaps only while it is still in force.
    package let catalogSource: (@Sendable () -> CatalogVersion)?
    package let clock: @Sendable () -> Int64
    package let metrics: ServiceMetrics?
    /// Where the changes a replay writes (its CORRECTIONs) are counted (`iap_changes_total`).
    package let changeTally: ChangeTally?
    package let logger: Logger
    /// One replay at a time among every process on the database: the `replay` lease (a CLI
    /// replay is a holder of its own), and within this process, `running`.
    package let leases: LeaseHolder
    private let running = Atomic<Bool>(false)
    /// How the replay's connections apply `session` (PgBouncer transaction pooling or not).
    package let poolMode: PoolMode

    package init(
        conninfo: String, catalog: Catalog, catalogSource: (@Sendable () -> CatalogVersion)? = nil,
        clock: @escaping @Sendable () -> Int64 = Timestamp.nowMillis, metrics: ServiceMetrics? = nil,
        changeTally: ChangeTally? = nil, logger: Logger = Logger(), leases: LeaseHolder? = nil,
        poolMode: PoolMode = .session
    ) {
        self.changeTally = changeTally
        self.poolMode = poolMode
        self.conninfo = conninfo
        self.catalog = catalog
        self.catalogSource = catalogSource
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.leases =
            leases
            ?? LeaseHolder(
                name: LeaseHolder.defaultName(port: "replay"), conninfo: conninfo, logger: logger, poolMode: poolMode)
    }

    /// A replay under the recorded catalog `version` (`iap-ledger replay`: no config needed).
    package convenience init(conninfo: String, recorded version: CatalogVersion, poolMode: PoolMode = .session) {
        self.init(conninfo: conninfo, catalog: version.catalog, catalogSource: { version }, poolMode: poolMode)
    }

    package static let leaseName = "replay"
    /// The replay's sessions. Commits before the swap need not wait for the disk: until the
    /// swap the next tables are scratch (rebuilt after a crash), and the swap itself commits
    /// synchronously, which makes everything before it durable too.
    package var session: SessionSettings {
        ServiceRole.sessionWithoutTimeout(poolMode).setting("synchronous_commit", "off")
    }
    /// Threads for the pure parts (decoding, rendering).
    package static let parallelism = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))

    /// Runs a replay. Swap safety: writers upsert `proj.chain_owners`/`proj.users` in the same
    /// transaction as their events, so `LOCK TABLE … ACCESS EXCLUSIVE` on both waits for every
    /// writer that has touched them and holds back every writer that has not; under that lock
    /// the last events (read without the xid horizon: every committed one) are folded into the
    /// new tables, which are then renamed into place. A writer blocked on the old table resolves
    /// the name again after the swap and writes its freshly rendered document into the new one.
    public func run(
        _ options: ReplayOptions, progress: (@Sendable (ReplayProgress) -> Void)? = nil
    ) throws(ServiceError) -> ReplayReport {
        let connection: Connection
        do {
            connection = try Connection(conninfo, connectTimeout: 10, session: session)
        } catch {
            throw .database(error)
        }
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw .busy("another replay is running")
        }
        defer { running.store(false, ordering: .releasing) }
        let lease = leases.lease(Self.leaseName, standsAside: false)
        guard lease.keep(force: true) else { throw .busy("another replay is running") }
        metrics?.replayRunning.set(1)
        defer {
            metrics?.replayRunning.set(0)
            lease.release()
        }
        // Renewed beside the run's long transactions; the swap checks it still holds it.
        return try lease.renewing { () throws(ServiceError) -> ReplayReport in
            try run(options, lease: lease, on: connection, progress: progress)
        }
    }

    private func run(
        _ options: ReplayOptions, lease: Lease, on connection: Connection,
        progress: (@Sendable (ReplayProgress) -> Void)?
    ) throws(ServiceError) -> ReplayReport {
        let wanted = options.projections.isEmpty ? Set(ProjectionVersions.all.map(\.name)) : options.projections
        for name in wanted where ProjectionVersions.definition(named: name) == nil {
            throw .invalidRequest(
                "unknown projection \"\(name)\" (known: \(ProjectionVersions.all.map(\.name).joined(separator: ", ")))")
        }
        if !options.dryRun && !options.allowDowngrade {
            let built = try database { () throws(DatabaseError) in try ProjectionVersions.built(on: connection) }
            if let ahead = ProjectionVersionAhead.all(built: built).first(where: { wanted.contains($0.projection) }) {
                throw .projectionVersionAhead(ahead)
            }
        }
        var report: ReplayReport
        if wanted.contains(ProjectionVersions.users.name) {
            var run = Run(engine: self, connection: connection, options: options, progress: progress, lease: lease)
            report = try run.execute()
            changeTally?.count(run.corrections)
            changeTally?.count(.correction, times: run.stagedWritten)
            Self.releaseInBackground(consume run)
        } else {
            report = ReplayReport(dryRun: options.dryRun, projections: [])
        }
        if wanted.contains(ProjectionVersions.analytics.name) {
            report.projections.append(ProjectionVersions.analytics.name)
            if !options.dryRun {
                try database { () throws(DatabaseError) in
                    try AnalyticsProjector.requestRebuild(on: connection)
                }
            }
        }
        return report
    }

    /// Frees a finished run's in-memory ledger (millions of small objects: ~0.5 s of single-threaded
    /// deallocation for 1M events) on a helper thread, so the report is not held back by it.
    private static func releaseInBackground(_ run: consuming Run) {
        let box = Released(run)
        let thread = Thread { box.drop() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    private final class Released: @unchecked Sendable {
        private var run: Run?
        init(_ run: consuming Run) { self.run = run }
        func drop() { run = nil }
    }
}
