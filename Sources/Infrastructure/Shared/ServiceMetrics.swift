import EventStore
import HTTP

/// The service's Prometheus metrics: HTTP traffic by route (never by raw path, so user ids
/// do not explode label cardinality), pool use, and ingest outcomes.
package final class ServiceMetrics: Sendable {
    package let registry = MetricsRegistry()
    package let requests: Counter
    package let latency: Histogram
    /// Ingest results by kind (transaction, receipt, notification, debit) and result
    /// (recorded, duplicate, or a rejection reason).
    package let ingest: Counter
    package let notificationTypes: Counter
    /// Replay progress: events folded by the running (or last) replay, and whether one runs.
    package let replayEvents: Gauge
    package let replayRunning: Gauge

    /// The metrics every room shares; a room's own metrics are registered on `registry` by the
    /// room (`ChangeTally.register(on:)`, `UserDocumentCache.register(on:)`, …), so this type
    /// names none of the rooms' types.
    package init(pool: ConnectionPool) {
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
        registry.gauge("iap_db_pool_waits_total", help: "Pool acquisitions that had to wait.") {
            Double(pool.stats.waits)
        }
    }

    package func observe(method: String, route: String, status: Int, seconds: Double) {
        requests.increment([route, method, String(status)])
        latency.observe(seconds, [route])
    }
}
