import EventStore
import HTTP
import Infrastructure

/// The webhook metrics of api.md / issue 13: attempts by endpoint and result, and per endpoint
/// the open deliveries and the age of the oldest (sampled from the table at scrape time, so
/// every instance reports the same truth whichever one delivers; only the open deliveries are
/// read, so a scrape does not grow with the deliveries made so far).
package final class WebhookMetrics: Sendable {
    /// Attempts by endpoint and result: `delivered`, `failed` (to be retried), `dead`.
    package let deliveries: Counter

    package init(
        registry: MetricsRegistry, pool: ConnectionPool, endpoints: [String], clock: @escaping @Sendable () -> Int64
    ) {
        deliveries = registry.counter(
            "iap_webhook_deliveries_total", help: "Webhook attempts by endpoint and result (delivered, failed, dead).",
            labels: ["endpoint", "result"])
        guard !endpoints.isEmpty else { return }
        let sample: @Sendable () -> [String: WebhookDeliveriesTable.Summary] = {
            (try? pool.withConnection { connection in
                WebhookDeliveriesTable.decodeSummary(try connection.query(WebhookDeliveriesTable.openSummary))
            }) ?? [:]
        }
        registry.gauge(
            "iap_webhook_pending",
            help: "Webhook deliveries not yet delivered nor dead (pending or failed), by endpoint.",
            labels: ["endpoint"]
        ) {
            let summaries = sample()
            return endpoints.map { (labels: [$0], value: Double(summaries[$0]?.open ?? 0)) }
        }
        registry.gauge(
            "iap_webhook_oldest_pending_seconds",
            help: "Age of the oldest webhook delivery not yet delivered nor dead, by endpoint.",
            labels: ["endpoint"]
        ) {
            let summaries = sample()
            let now = clock()
            return endpoints.map { name in
                (
                    labels: [name],
                    value: summaries[name]?.oldestOpenQueuedAt.map { Double(max(0, now - $0)) / 1000 } ?? 0
                )
            }
        }
    }
}
