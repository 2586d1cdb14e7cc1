import HTTP
import Ledger
import Synchronization

/// Changes this process wrote, by type (`iap_changes_total{type}`), counted after their commit.
package final class ChangeTally: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    package init() {}

    package func count(_ changes: [NewChange]) {
        guard !changes.isEmpty else { return }
        counts.withLock { counts in
            for change in changes { counts[change.draft.type.rawValue, default: 0] += 1 }
        }
    }

    package func count(_ type: ChangeType, times: Int) {
        guard times > 0 else { return }
        counts.withLock { $0[type.rawValue, default: 0] += times }
    }

    /// Samples for the metrics registry, every type listed (0 when none was written).
    package var samples: [(labels: [String], value: Double)] {
        let counts = counts.withLock { $0 }
        return ChangeType.allCases.map { ([$0.rawValue], Double(counts[$0.rawValue] ?? 0)) }
    }
}

extension ChangeTally {
    /// `iap_changes_total{type}`: changes this process wrote to the feed.
    package func register(on registry: MetricsRegistry) {
        registry.counter(
            "iap_changes_total", help: "Changes (api.md §4) this process wrote to the feed, by type.",
            labels: ["type"]
        ) { [self] in samples }
    }
}
