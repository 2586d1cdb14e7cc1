import AppStore
import AppleAPI
import Changes
import Console
import EventStore
import Foundation
import HTTP
import Infrastructure
import Ingest
import JSON
import Reads
import Replay

/// The running service, and its composition root: PostgreSQL (embedded or external),
/// migrations, the pool, the verifier, the projections, the background jobs, the HTTP server
/// and the change feed's deliveries, started in that order and stopped in reverse.
public final class ServiceApp: Sendable {
    /// A start-up failure, as one line naming its cause.
    public struct StartupError: Error, CustomStringConvertible, Sendable {
        public var description: String

        package init(description: String) {
            self.description = description
        }
    }

    public let url: String
    public let port: Int
    public let service: LedgerService
    /// Set by `beginDraining()`: `/readyz` answers 503 while everything else is still served.
    package let drain: DrainSwitch
    public let projections: ProjectionRuntime
    /// Every periodic background job: the polls of catalog and projection versions, the
    /// analytics projector, the change clock, the reconciler, the consumption responder.
    package let jobs: JobRunner
    /// Everything started, in order: what `stop()` drains and stops in reverse.
    package let parts: ComponentGroup
    /// The long polls of `GET /v1/changes` waiting here (tests wait for them to register).
    package let changeWaiters: ChangeFeedWaiters
    /// Every route the router knows (method, pattern, required scope), for the OpenAPI test.
    package let routes: [(method: String, pattern: String, scope: String?)]

    public static func start(_ options: Options) throws(StartupError) -> ServiceApp {
        let logger = options.logger
        do {
            try options.configuration.validate()
        } catch {
            throw StartupError(description: error.description)
        }
        for warning in options.configuration.warnings { logger.warning(warning) }
        // Every part joins the group once started: a failure below stops exactly those, in
        // reverse, and `stop()` stops them all the same way (ComponentGroup).
        let parts = ComponentGroup()
        do {
            return try start(options, parts: parts)
        } catch {
            parts.stopAll()
            throw error
        }
    }

    /// The composition root: each part is made from what the ones before it made, started,
    /// and added to `parts` in this order; `stop()` drains and stops them in reverse.
    private static func start(_ options: Options, parts: ComponentGroup) throws(StartupError) -> ServiceApp {
        let logger = options.logger
        let adminConninfo: String
        if let url = options.databaseURL {
            adminConninfo = url
        } else {
            let lock = try DataDirectoryLock.acquire(options.dataDirectory)
            parts.add("data-directory lock", stop: lock.release)
            do {
                let cluster = try EmbeddedPostgres.start(dataDirectory: options.dataDirectory) { line in
                    logger.info(line)
                }
                // A SIGKILLed or crashed serve must not leave its cluster running.
                cluster.stopWhenProcessExits()
                parts.add("embedded PostgreSQL", stop: cluster.stop)
                adminConninfo = cluster.connectionString()
            } catch {
                throw StartupError(description: "embedded PostgreSQL: \(error)")
            }
        }
        try migrate(
            conninfo: adminConninfo, migrations: options.migrations, poolMode: options.databasePoolMode,
            logger: logger)
        let pool = ConnectionPool(
            conninfo: adminConninfo, size: options.databaseConnections, session: serviceSession(options))
        let readRouting = try makeReadRouting(options, primary: pool)
        let verifier: SignedDataVerifier
        do {
            verifier = try makeVerifier(configuration: options.configuration)
        } catch {
            throw StartupError(description: "trusted roots: \(error)")
        }
        let receiptSettings = options.configuration.verifyReceipt
        guard let production = URL(string: receiptSettings.production),
            let sandbox = URL(string: receiptSettings.sandbox)
        else { throw StartupError(description: "verifyReceipt: invalid URL") }
        let receipts = ReceiptVerifier(
            productionURL: production, sandboxURL: sandbox, timeout: receiptSettings.timeoutSeconds,
            maxRetries: receiptSettings.retries)
        // The catalog in force before anything is served (docs/api.md §1.1): recorded if the config
        // brings a new one (its users re-rendered), else the newest recorded version.
        let catalogs: CatalogInForce
        do {
            catalogs = CatalogInForce(
                try CatalogRecorder.reconcile(
                    conninfo: adminConninfo, poolMode: options.databasePoolMode,
                    configured: options.configuration.catalog,
                    source: CatalogVersions.sourcePath(options.configurationPath), now: options.clock(), logger: logger)
            )
        } catch {
            throw StartupError(description: "catalog: \(error)")
        }
        let documentCheck =
            options.userCacheBytes > 0
            ? UserDocumentCacheCheck(
                conninfo: adminConninfo, session: serviceSession(options),
                cache: UserDocumentCache(capacityBytes: options.userCacheBytes), logger: logger)
            : nil
        if let documentCheck { parts.add("user document cache check", stop: documentCheck.stop) }
        let projectionVersions = ProjectionVersionWatch(logger: logger)
        let service = LedgerService(
            pool: pool, verifier: verifier, receipts: receipts, configuration: options.configuration, logger: logger,
            clock: options.clock, catalogs: catalogs, readRouting: readRouting, projectionVersions: projectionVersions)
        let rooms = Rooms(
            ledger: service, documentCheck: documentCheck,
            groupCommit: options.ingestCommitters > 0
                ? .init(committers: options.ingestCommitters, maxSize: options.ingestBatchMax) : nil)
        let metrics = ServiceMetrics(pool: pool)
        ProjectionLag.register(pool: pool, on: metrics.registry)
        service.changeTally.register(on: metrics.registry)
        service.unconfiguredProducts.register(on: metrics.registry)
        documentCheck?.cache.register(on: metrics.registry)
        rooms.ingestion.batchSizes.report(
            to: metrics.registry.histogram(
                "iap_ingest_batch_size",
                help: "Purchases and notifications recorded per durable commit (group commit).",
                buckets: IngestBatchSizes.buckets))
        // Who runs which background job (ops.leases); named with the real port once it is bound.
        let leases = LeaseHolder(
            name: options.instanceName ?? LeaseHolder.defaultName(port: String(options.port)), conninfo: adminConninfo,
            logger: logger, poolMode: options.databasePoolMode)
        metrics.registerLeases(leases)
        parts.add("leases", stop: leases.close)  // after every job released its lease
        leases.standAside {
            projectionVersions.projectionsAhead.first.map {
                "the database's \($0.projection) projection is at version \($0.database), newer than this code's \($0.code)"
            }
        }
        if let readRouting { registerReplicaMetrics(readRouting, on: metrics.registry) }
        let projections: ProjectionRuntime
        do {
            projections = try ProjectionRuntime.start(
                conninfo: adminConninfo, service: service, metrics: metrics, leases: leases, clock: options.clock)
        } catch {
            throw StartupError(description: "projections: \(error)")
        }
        // Rolling upgrades: built by newer code (now or later) means unready and no writes here.
        projectionVersions.refresh(pool: pool)
        // Every periodic background job runs on it, and stops with it (JobRunner).
        let jobs = JobRunner(logger: logger, registry: metrics.registry)
        parts.add("background jobs", stop: jobs.stopAll)
        jobs.start(projectionVersions.makePollJob(pool: pool))
        projectionVersions.registerGauge(on: metrics.registry)
        // A version another instance records is in force here within the poll interval; the
        // cached documents rendered under the old one go at once.
        jobs.start(
            catalogs.makePollJob(pool: pool) { version in
                documentCheck?.cache.invalidateAll()
                logger.info("catalog version in force", ["version": String(version.version), "hash": version.hash])
                // Analysts' copy too (idempotent: every instance that notices publishes the same).
                do {
                    try pool.withConnection { connection in
                        try AnalyticsProjector.publish(version.catalog, on: connection)
                    }
                } catch {
                    logger.warning("catalog: cannot publish analytics.products", ["error": "\(error)"])
                }
            })
        let authenticator = KeyAuthenticator(pool: pool, positiveTTLMillis: options.keyCacheMillis)
        var router = Router(
            authenticator: { authenticator.scopes(forSecret: $0) },
            // The key could not be checked because PostgreSQL is down: "retry", not "bad key".
            unauthenticated: { request in
                authenticator.lookupWasUnavailable(for: request)
                    ? ErrorMapping.answer(
                        .storeUnavailable("cannot check the API key"), requestId: request.requestId, logger: logger)
                    : nil
            },
            observer: { method, route, status, seconds in
                metrics.observe(method: method, route: route, status: status, seconds: seconds)
            })
        let changeWaiters = ChangeFeedWaiters(feed: rooms.feed)
        metrics.registry.gauge(
            "iap_changes_waiters", help: "GET /v1/changes long polls waiting in this process."
        ) { Double(changeWaiters.count) }
        let handlers = HandlerPool(threads: options.threads)
        parts.add("request handlers", drain: handlers.stop)
        router.pool = handlers
        metrics.registry.gauge(
            "iap_http_handlers_busy", help: "Requests queued for or running on a handler thread (--threads)."
        ) { Double(handlers.pending) }
        APIRoutes(
            reads: rooms.reads, ingestion: rooms.ingestion, apple: rooms.apple, metrics: metrics,
            keyNames: { authenticator.keyName(of: $0) }, handlers: handlers
        )
        .register(on: &router)
        ChangeFeedRoutes(service: service, changeWaiters: changeWaiters).register(on: &router)
        let drain = DrainSwitch()
        OperationsRoutes(
            pool: pool, metrics: metrics, drain: drain, projectionVersions: projectionVersions, logger: logger
        ).register(on: &router)
        ConsoleRoutes().register(on: &router)
        AdminRoutes(engine: projections.engine, service: service, leases: leases).register(on: &router)
        registerRoomRoutes(rooms, keyNames: { authenticator.keyName(of: $0) }, on: &router)
        let offerSigners = options.offerSigners ?? OfferRoutes.signers(from: options.configuration)
        OfferRoutes(
            apps: options.configuration.apps, signers: offerSigners, clock: options.clock, logger: logger
        ).register(on: &router)
        RetentionRoutes(apple: rooms.apple, signers: offerSigners, registry: metrics.registry).register(on: &router)
        let handler = router
        var httpConfiguration = HTTPServer.Configuration(host: options.host, port: options.port)
        httpConfiguration.threadCount = options.httpWorkers
        httpConfiguration.connectionTimeoutSeconds = options.connectionTimeoutSeconds
        // Each connection (idle long polls too) holds a descriptor; 1024 is below connectionLimit.
        OpenFileLimit.raiseToHard()
        let server = HTTPServer(configuration: httpConfiguration) { request in
            ProblemRequestID.stamp(handler.handle(request), requestId: request.requestId)
        }
        // New webhook endpoints start at the feed's head now, before any request is answered: a
        // change acknowledged from here on is delivered to them (the dispatcher starts below).
        do {
            try WebhookDispatcher.placeNewEndpoints(options.configuration.webhooks, pool: pool, logger: logger)
        } catch {
            throw StartupError(description: "webhooks: cannot place the new endpoints' cursors: \(error)")
        }
        let port: Int
        do {
            port = try server.start()
        } catch {
            throw StartupError(description: "HTTP: \(error)")
        }
        // Drained first: no new request, the ones in flight answered (the handlers drain next,
        // so those past the server's grace finish before what they use stops).
        parts.add("HTTP server", drain: server.stop)
        if options.instanceName == nil { leases.rename(LeaseHolder.defaultName(port: String(port))) }
        jobs.start(projections.makeProjectorJob())
        let changeClock = ChangeClock(
            service: service, conninfo: adminConninfo, session: ServiceRole.session(options.databasePoolMode),
            leases: leases,
            interval: options.changeClockInterval)
        jobs.start(changeClock.job)
        let reconciler = Reconciler(
            apple: rooms.apple, conninfo: adminConninfo, interval: options.configuration.reconcileIntervalSeconds,
            leases: leases, registry: metrics.registry)
        if let job = reconciler.makeJob() { jobs.start(job) }
        let consumption = ConsumptionResponder(
            apple: rooms.apple, conninfo: adminConninfo, leases: leases, registry: metrics.registry)
        if let job = consumption.makeJob() { jobs.start(job) }
        let host = options.host.contains(":") ? "[\(options.host)]" : options.host
        // Webhook delivery of the change feed (api.md §4): wall-clock timed, whatever options.clock says.
        let webhooks = WebhookDispatcher.start(
            conninfo: adminConninfo, configuration: options.configuration, logger: logger, registry: metrics.registry,
            pool: pool, leases: leases, clock: Timestamp.nowMillis)
        parts.add("webhook delivery", stop: webhooks.stop)
        // Long polls are answered before the server drains, so none holds its grace up.
        parts.add("change feed long polls", drain: changeWaiters.stop)
        return ServiceApp(
            url: "http://\(host):\(port)", port: port, service: service, drain: drain, projections: projections,
            routes: router.routes, jobs: jobs, parts: parts, changeWaiters: changeWaiters)
    }

    private init(
        url: String, port: Int, service: LedgerService, drain: DrainSwitch, projections: ProjectionRuntime,
        routes: [(method: String, pattern: String, scope: String?)], jobs: JobRunner, parts: ComponentGroup,
        changeWaiters: ChangeFeedWaiters
    ) {
        self.changeWaiters = changeWaiters
        self.url = url
        self.port = port
        self.service = service
        self.drain = drain
        self.projections = projections
        self.routes = routes
        self.jobs = jobs
        self.parts = parts
    }

    /// The first step of a graceful stop behind a load balancer: `/readyz` turns 503 at once,
    /// every other route keeps answering until `stop()`.
    public func beginDraining() { drain.begin() }

    /// Drains (long polls answered, no new request, those in flight finished), then stops
    /// everything in the reverse order of its start, the embedded cluster last (ComponentGroup).
    public func stop() { parts.stopAll() }
}
