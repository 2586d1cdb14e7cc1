import EventStore
import Foundation
import HTTP
import Infrastructure
import Synchronization

/// Delivers the change feed to the configured webhook endpoints (api.md §4): one thread per
/// endpoint for its rounds on the database, each the thin shell around a WebhookPlanner, and one
/// HTTPPoster thread (libcurl's multi interface) that carries every endpoint's sends. Among several service instances one
/// delivers each endpoint: the holder of its `webhooks:<endpoint>` lease (Lease: released on a
/// graceful stop, run out within 10 s after `kill -9`). Every write transaction of a round
/// starts with the lease's fencing check, so a holder that stalled past its lease cannot record
/// attempts or move the cursor once another instance delivers; at worst a send it had in flight
/// reaches the endpoint twice (receivers dedupe by change id).
///
/// Each round of the holder: (1) writes the attempts that finished, (2) follows the feed from
/// the endpoint's cursor and creates the deliveries its filters take, in one transaction with
/// the cursor's move (keeping the changes it read, so a first send reads the feed no second
/// time), (3) asks the planner which open deliveries to send and starts them
/// (up to `maxInFlight` at once, a user's changes one at a time in cursor order). It also claims
/// `readyPerSlot` more per slot, which a finished send starts at once (WebhookSendSlots); their
/// outcomes are written by the next round, in one transaction.
/// A new endpoint starts at the feed's head when the first service that has it starts
/// (`placeNewEndpoints`, before that service answers a request), not at the feed's beginning.
package final class WebhookDispatcher: Sendable {
    package let conninfo: String
    package let endpoints: [WebhookEndpoint]
    package let logger: Logger
    package let clock: @Sendable () -> Int64
    package let metrics: WebhookMetrics
    package let maxInFlight: Int
    private let workers: [Worker]
    /// Nil without endpoints: no thread is started for nothing.
    private let poster: HTTPPoster?

    package init(
        conninfo: String, endpoints: [WebhookEndpoint], logger: Logger, registry: MetricsRegistry,
        pool: ConnectionPool, leases: LeaseHolder, clock: @escaping @Sendable () -> Int64 = Timestamp.nowMillis,
        maxInFlight: Int = 32
    ) {
        self.conninfo = conninfo
        self.endpoints = endpoints
        self.logger = logger
        self.clock = clock
        self.maxInFlight = maxInFlight
        let metrics = WebhookMetrics(registry: registry, pool: pool, endpoints: endpoints.map(\.name), clock: clock)
        self.metrics = metrics
        let poster = endpoints.isEmpty ? nil : HTTPPoster(name: "webhooks-http")
        self.poster = poster
        workers = endpoints.map {
            Worker(
                endpoint: $0, conninfo: conninfo,
                // A stuck statement must not hold the endpoint forever.
                session: ServiceRole.session(pool.session.poolMode).setting("statement_timeout", "30s"),
                logger: logger, clock: clock, metrics: metrics,
                maxInFlight: maxInFlight, lease: leases.lease(Self.leaseName($0.name)), poster: poster!)
        }
    }

    /// Starts delivering in the background (nothing to do without endpoints).
    package static func start(
        conninfo: String, configuration: Configuration, logger: Logger, registry: MetricsRegistry, pool: ConnectionPool,
        leases: LeaseHolder, clock: @escaping @Sendable () -> Int64
    ) -> WebhookDispatcher {
        let dispatcher = WebhookDispatcher(
            conninfo: conninfo, endpoints: configuration.webhooks, logger: logger, registry: registry, pool: pool,
            leases: leases, clock: clock)
        for worker in dispatcher.workers { worker.start() }
        return dispatcher
    }

    package func stop() {
        for worker in workers { worker.stopping.store(true, ordering: .relaxed) }
        for worker in workers { worker.join() }
        // After the workers: their last sends in flight were recorded (or given up) by then.
        poster?.stop()
    }

    /// Creates the cursor of each of `endpoints` that has none, at the feed's head: the endpoint
    /// receives the changes written from then on (docs/changes.md, "Where a new endpoint
    /// starts"). The service does it before its HTTP server opens, so every change it
    /// acknowledges reaches a new endpoint; when a worker first ran it, the purchases answered
    /// before that run (a lease wait, a slow start) were behind the head and never sent. A
    /// cursor already there stays. Answers the head where endpoints were placed now, by name.
    @discardableResult
    package static func placeNewEndpoints(_ endpoints: [String], on connection: Connection, now: Int64) throws
        -> [String: FeedCursor]
    {
        guard !endpoints.isEmpty else { return [:] }
        let head = ChangeFeedTable.cursor(fromHead: try connection.query(ChangeFeedTable.head))
        var placed: [String: FeedCursor] = [:]
        for endpoint in endpoints
        where try connection.execute(WebhookDeliveriesTable.startCursor(endpoint: endpoint, at: head, now: now)) > 0 {
            placed[endpoint] = head
        }
        return placed
    }

    /// `placeNewEndpoints` at start-up, each placed endpoint logged.
    package static func placeNewEndpoints(_ endpoints: [WebhookEndpoint], pool: ConnectionPool, logger: Logger) throws {
        guard !endpoints.isEmpty else { return }
        let placed = try pool.withConnection { connection in
            try placeNewEndpoints(endpoints.map(\.name), on: connection, now: Timestamp.nowMillis())
        }
        for (endpoint, head) in placed.sorted(by: { $0.key < $1.key }) {
            logger.info("webhooks: endpoint starts at the feed's head", ["endpoint": endpoint, "cursor": "\(head)"])
        }
    }

    /// The lease of an endpoint's deliverer.
    package static func leaseName(_ endpoint: String) -> String { "webhooks:" + endpoint }
}
