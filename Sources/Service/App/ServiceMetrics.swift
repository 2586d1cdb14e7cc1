import EventStore
import HTTP

/// The service's Prometheus metrics: HTTP traffic by route (never by raw path, so user ids
/// do not explode label cardinality), pool use, and ingest outcomes.
final class ServiceMetrics: Sendable {
    let registry = MetricsRegistry()
    let requests: Counter
    let latency: Histogram
    /// Ingest results by kind (transaction, receipt, notification, debit) and result
    /// (recorded, duplicate, or a rejection reason).
    let ingest: Counter
    let notificationTypes: Counter
    /// Replay progress: events folded by the running (or last) replay, and whether one runs.
    let replayEvents: Gauge
    let replayRunning: Gauge
    /// Changes written to the feed by this process (`iap_changes_total`), by ingest, the clock
    /// and replays.
    let changeTally: ChangeTally?

    init(
        pool: ConnectionPool, documentCache: UserDocumentCache? = nil, changeTally: ChangeTally? = nil,
        unconfiguredProducts: UnconfiguredProductTally? = nil
    ) {
        self.changeTally = changeTally
        requests = registry.counter(
            "iap_http_requests_total", help: "HTTP requests by route, method and status.",
            labels: ["route", "method", "status"])
        latency = registry.histogram(
            "iap_http_request_duration_seconds", help: "HTTP request latency by route.", labels: ["route"])
        ingest = registry.counter(
            "iap_ingest_results_total", help: "Ingested facts by kind and result or rejection reason.",
            labels: ["kind", "result"])
        notificationTypes = registry.counter(
            "iap_notifications_total", help: "Verified App Store notifications by type and subtype.",
            labels: ["type", "subtype"])
        registry.gauge("iap_db_pool_connections", help: "PostgreSQL pool slots by state.", labels: ["state"]) {
            let stats = pool.stats
            return [(["size"], Double(stats.size)), (["open"], Double(stats.open)), (["in_use"], Double(stats.inUse))]
        }
        replayEvents = registry.gauge("iap_replay_events", help: "Events folded by the running (or last) replay.")
        replayRunning = registry.gauge("iap_replay_running", help: "1 while a replay runs, else 0.")
        replayEvents.set(0)
        replayRunning.set(0)
        registry.gauge(
            "iap_projection_lag_events", help: "Events in the log a projection has not applied yet.",
            labels: ["projection"], sample: { Self.projectionLagSamples(pool: pool) })
        registry.gauge("iap_db_pool_waits_total", help: "Pool acquisitions that had to wait.") {
            Double(pool.stats.waits)
        }
        if let changeTally {
            registry.counter(
                "iap_changes_total", help: "Changes (api.md §4) this process wrote to the feed, by type.",
                labels: ["type"]
            ) { changeTally.samples }
        }
        if let unconfiguredProducts {
            registry.counter(
                "iap_unconfigured_product_transactions_total",
                help:
                    "Transactions this process recorded of products missing from the catalog in force (api.md §1), by app and product.",
                labels: ["bundleId", "productId"]
            ) { unconfiguredProducts.samples }
        }
        if let cache = documentCache {
            registry.counter(
                "iap_user_cache_reads_total",
                help:
                    "GET /v1/users/{id} by how the in-process document cache served it (hit, miss, bypass: no check of PostgreSQL succeeded).",
                labels: ["result"]
            ) {
                [
                    (["hit"], Double(cache.hits.load(ordering: .relaxed))),
                    (["miss"], Double(cache.misses.load(ordering: .relaxed))),
                    (["bypass"], Double(cache.bypasses.load(ordering: .relaxed))),
                ]
            }
            registry.gauge(
                "iap_user_cache_bytes",
                help: "Memory held by cached user documents (capacity: IAP_LEDGER_USER_CACHE_MB)."
            ) {
                Double(cache.stats.bytes)
            }
        }
    }

    func observe(method: String, route: String, status: Int, seconds: Double) {
        requests.increment([route, method, String(status)])
        latency.observe(seconds, [route])
    }
}

extension ServiceMetrics {
    /// `iap_projection_lag_events` samples, taken at scrape time (empty when the store is down).
    static func projectionLagSamples(pool: ConnectionPool) -> [(labels: [String], value: Double)] {
        (try? pool.withConnection { connection in
            let head = try ProjectionLag.headSeq(on: connection)
            let stored = try ProjectionVersions.stored(on: connection)
            return try ProjectionVersions.all.map { definition in
                let lag = try ProjectionLag.position(
                    of: definition, stored: stored[definition.name].map { ($0.tx, $0.seq) }, headSeq: head,
                    on: connection
                ).lag
                return (labels: [definition.name], value: Double(lag))
            }
        }) ?? []
    }
}
