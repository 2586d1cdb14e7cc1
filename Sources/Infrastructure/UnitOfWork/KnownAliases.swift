import Synchronization

/// Aliases this process has resolved (api.md §7), so the cached user read answers an alias from
/// the cache like any id. Only merges are remembered, never "not an alias": a merge is for good
/// (an alias never names another user later), while an id that is no alias now may become one
/// on any instance. Bounded: past `limit` entries it starts over (a miss only costs a lookup).
package final class KnownAliases: Sendable {
    private let targets = Mutex<[String: String]>([:])
    private let limit: Int

    package init(limit: Int = 100_000) { self.limit = limit }

    /// The user `alias` was merged into, if this process has seen it.
    package func target(of alias: String) -> String? { targets.withLock { $0[alias] } }

    package func remember(alias: String, target: String) {
        targets.withLock { targets in
            if targets.count >= limit { targets.removeAll(keepingCapacity: true) }
            targets[alias] = target
        }
    }

    /// An erased alias names nobody any more.
    package func forget(_ alias: String) {
        _ = targets.withLock { $0.removeValue(forKey: alias) }
    }
}
