import EventStore
import HTTP
import Ledger

/// What the service runs for its projections besides the inline writes: the start-up version
/// check (rebuild before serving), the replay engine behind the admin routes, and the
/// analytics catch-up projector thread.
public final class ProjectionRuntime: Sendable {
    public let engine: ReplayEngine
    let projector: AnalyticsProjector
    let service: LedgerService

    /// Rebuilds projections whose version changed, then starts the analytics projector.
    static func start(
        conninfo: String, service: LedgerService, metrics: ServiceMetrics, clock: @escaping @Sendable () -> Int64
    ) throws(ServiceError) -> ProjectionRuntime {
        let catalogs = service.catalogs
        // A replay renders under the newest version, even one recorded since the last poll.
        let engine = ReplayEngine(
            conninfo: conninfo, catalog: catalogs.current.catalog,
            catalogSource: {
                try? service.reloadCatalog()
                return catalogs.current
            },
            clock: clock, metrics: metrics, logger: service.logger)
        try ProjectionVersions.prepare(conninfo: conninfo, engine: engine, logger: service.logger)
        let projector = AnalyticsProjector(conninfo: conninfo, catalog: catalogs.current.catalog, logger: service.logger)
        projector.start()
        return ProjectionRuntime(engine: engine, projector: projector, service: service)
    }

    private init(engine: ReplayEngine, projector: AnalyticsProjector, service: LedgerService) {
        self.engine = engine
        self.projector = projector
        self.service = service
    }

    func register(on router: inout Router) {
        AdminRoutes(engine: engine, service: service).register(on: &router)
    }

    func stop() { projector.stop() }
}
