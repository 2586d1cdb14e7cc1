import EventStore
import Infrastructure
import Ledger

/// What the service runs for its projections besides the inline writes: the start-up version
/// check (ProjectionStartup: rebuild before serving), the replay engine the admin routes call
/// (API/AdminRoutes.swift registers them), and the analytics catch-up projector thread.
public final class ProjectionRuntime: Sendable {
    public let engine: ReplayEngine
    package let projector: AnalyticsProjector

    /// Rebuilds projections whose version changed; the analytics projector's job
    /// (`makeProjectorJob`) runs once the instance is up.
    package static func start(
        conninfo: String, service: LedgerService, metrics: ServiceMetrics, leases: LeaseHolder,
        clock: @escaping @Sendable () -> Int64
    ) throws(ServiceError) -> ProjectionRuntime {
        let catalogs = service.catalogs
        // A replay renders under the newest version, even one recorded since the last poll.
        let engine = ReplayEngine(
            conninfo: conninfo, catalog: catalogs.current.catalog,
            catalogSource: {
                try? service.reloadCatalog()
                return catalogs.current
            },
            clock: clock, metrics: metrics, changeTally: service.changeTally, logger: service.logger, leases: leases,
            poolMode: service.pool.session.poolMode)
        try ProjectionStartup.prepare(conninfo: conninfo, engine: engine, logger: service.logger)
        let projector = AnalyticsProjector(
            conninfo: conninfo, catalog: catalogs.current.catalog,
            commissions: Dictionary(
                service.configuration.apps.map { ($0.bundleId, $0.commission) }, uniquingKeysWith: { first, _ in first }
            ),
            logger: service.logger, leases: leases, poolMode: service.pool.session.poolMode)
        return ProjectionRuntime(engine: engine, projector: projector)
    }

    private init(engine: ReplayEngine, projector: AnalyticsProjector) {
        self.engine = engine
        self.projector = projector
    }

    /// The analytics projector's background job, started by the composition root once the
    /// instance is up (and named: its lease shows the real port).
    package func makeProjectorJob() -> BackgroundJob { projector.makeJob() }

    /// The instance's lease holder (every job's, not only the projector's).
    package var leases: LeaseHolder { engine.leases }
}
