import HTTP
import Ledger
import Synchronization

/// Transactions this process recorded of products missing from the catalog in force, per app and
/// product (`iap_unconfigured_product_transactions_total{bundleId,productId}`, api.md §1). Such a
/// purchase is recorded and granted by its own product id, which is easy to miss: a typo in the
/// config, a product added in App Store Connect but not here. So it is never silent — counted
/// here, warned about once per product per process (one line, not one per transaction, so a
/// busy product cannot flood the log), and listed from the database by
/// `GET /v1/admin/catalog/unconfigured` (`UnconfiguredProducts`), which restarts do not reset.
package final class UnconfiguredProductTally: Sendable {
    package struct Key: Hashable, Sendable, Comparable {
        package var bundleId: String
        package var productId: String

        package static func < (a: Key, b: Key) -> Bool { (a.bundleId, a.productId) < (b.bundleId, b.productId) }
    }

    private let counts = Mutex<[Key: Int]>([:])

    package init() {}

    /// Counts the transactions `outcome` recorded (not its duplicates) whose product `catalog`
    /// does not name; returns the products this process had never counted before, sorted.
    package func count(_ transactions: [(fact: Transaction, recorded: Bool)], catalog: Catalog) -> [Key] {
        let unconfigured = transactions.filter { $0.recorded && catalog.products[$0.fact.productId] == nil }
        guard !unconfigured.isEmpty else { return [] }
        return counts.withLock { counts in
            var first: [Key] = []
            for entry in unconfigured {
                let key = Key(bundleId: entry.fact.bundleId, productId: entry.fact.productId)
                if counts[key] == nil { first.append(key) }
                counts[key, default: 0] += 1
            }
            return first.sorted()
        }
    }

    /// Samples for the metrics registry: one per product seen, labels (bundleId, productId).
    package var samples: [(labels: [String], value: Double)] {
        counts.withLock { $0 }.sorted { $0.key < $1.key }.map {
            ([$0.key.bundleId, $0.key.productId], Double($0.value))
        }
    }
}

extension UnconfiguredProductTally {
    /// `iap_unconfigured_product_transactions_total{bundleId,productId}`.
    package func register(on registry: MetricsRegistry) {
        registry.counter(
            "iap_unconfigured_product_transactions_total",
            help:
                "Transactions this process recorded of products missing from the catalog in force (api.md §1), by app and product.",
            labels: ["bundleId", "productId"]
        ) { [self] in samples }
    }
}
