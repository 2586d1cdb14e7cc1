import HTTP
import Infrastructure
import Synchronization

/// Rendered Customer documents kept in memory, so `GET /v1/users/{id}` can answer without a
/// query of its own. It never answers with a document older than a write acknowledged before
/// the request began, by any process sharing the database: every read first waits for a
/// `UserDocumentCacheCheck` check that started after it (one round trip shared by every
/// concurrent read), which drops the documents changed since the previous check.
///
/// An insert races the invalidations: a read that fetched a document from PostgreSQL may only
/// store it if no invalidation touched its shard since it took its `Ticket` (taken after its
/// check, before its query). A later check then drops anything that changed after the query.
package final class UserDocumentCache: Sendable {
    package typealias Judged = UserDocuments.Judged

    /// Proof of which invalidations an insert has already seen.
    package struct Ticket: Sendable {
        fileprivate let shard: Int
        fileprivate let generation: UInt64
    }

    package struct Stats: Sendable, Equatable {
        package var entries = 0
        package var bytes = 0
    }

    /// Reads answered from memory, reads that had to query PostgreSQL, and reads that skipped
    /// the cache because no check of PostgreSQL succeeded (counted by the caller, for metrics).
    package let hits = Atomic<Int>(0)
    package let misses = Atomic<Int>(0)
    package let bypasses = Atomic<Int>(0)

    private struct Shard {
        var entries: [String: Judged] = [:]
        var bytes = 0
        /// Bumped by every invalidation that reaches the shard.
        var generation: UInt64 = 0
    }

    private final class ShardBox: Sendable {
        let state = Mutex(Shard())
    }

    /// Per-entry bookkeeping beyond the document and key bytes (dictionary slot, array header).
    private static let entryOverhead = 96

    package let capacityBytes: Int
    private let shards: [ShardBox]
    private let shardCapacity: Int

    /// - Parameter capacityBytes: documents beyond this are evicted (arbitrary entries of the
    ///   shard that grew too large), which bounds the service's memory under any user count.
    package init(capacityBytes: Int, shardCount: Int = 64) {
        precondition(capacityBytes > 0 && shardCount > 0)
        self.capacityBytes = capacityBytes
        self.shards = (0..<shardCount).map { _ in ShardBox() }
        self.shardCapacity = max(1, capacityBytes / shardCount)
    }

    /// The cached document of `userId` if it is true at `now`.
    package func document(for userId: String, at now: Int64) -> [UInt8]? {
        shards[shardIndex(userId)].state.withLock { shard in
            guard let entry = shard.entries[userId], entry.validFrom <= now else { return nil }
            if let until = entry.validUntil, until <= now { return nil }
            return entry.document
        }
    }

    /// Take before reading `userId`'s document from PostgreSQL (and after the read's check).
    package func ticket(for userId: String) -> Ticket {
        let index = shardIndex(userId)
        return Ticket(shard: index, generation: shards[index].state.withLock { $0.generation })
    }

    /// Stores what a read fetched, unless an invalidation reached the shard since `ticket`:
    /// then the fetched document may already be out of date, and the next read fetches again.
    package func insert(_ judged: Judged, for userId: String, ticket: Ticket) {
        let size = judged.document.count + userId.utf8.count + Self.entryOverhead
        guard size <= shardCapacity else { return }
        shards[ticket.shard].state.withLock { shard in
            guard shard.generation == ticket.generation else { return }
            if let old = shard.entries.updateValue(judged, forKey: userId) {
                shard.bytes -= old.document.count + userId.utf8.count + Self.entryOverhead
            }
            shard.bytes += size
            while shard.bytes > shardCapacity, let victim = shard.entries.first(where: { $0.key != userId }) {
                shard.entries.removeValue(forKey: victim.key)
                shard.bytes -= victim.value.document.count + victim.key.utf8.count + Self.entryOverhead
            }
        }
    }

    /// Drops `userIds`' documents: PostgreSQL says they changed.
    package func invalidate(_ userIds: some Sequence<String>) {
        var byShard: [Int: [String]] = [:]
        for userId in userIds { byShard[shardIndex(userId), default: []].append(userId) }
        for (index, ids) in byShard {
            shards[index].state.withLock { shard in
                shard.generation &+= 1
                for userId in ids {
                    if let old = shard.entries.removeValue(forKey: userId) {
                        shard.bytes -= old.document.count + userId.utf8.count + Self.entryOverhead
                    }
                }
            }
        }
    }

    /// Drops everything (the projection was rebuilt, or changes may have been missed).
    package func invalidateAll() {
        for box in shards {
            box.state.withLock { shard in
                shard.generation &+= 1
                shard.entries.removeAll()
                shard.bytes = 0
            }
        }
    }

    package var stats: Stats {
        shards.reduce(into: Stats()) { total, box in
            box.state.withLock { shard in
                total.entries += shard.entries.count
                total.bytes += shard.bytes
            }
        }
    }

    private func shardIndex(_ userId: String) -> Int {
        // Process-seeded hashing: an attacker cannot aim many ids at one shard.
        Int(UInt(bitPattern: userId.hashValue) % UInt(shards.count))
    }
}

extension UserDocumentCache {
    /// `iap_user_cache_reads_total{result}` and `iap_user_cache_bytes`.
    package func register(on registry: MetricsRegistry) {
        registry.counter(
            "iap_user_cache_reads_total",
            help:
                "GET /v1/users/{id} by how the in-process document cache served it (hit, miss, bypass: no check of PostgreSQL succeeded).",
            labels: ["result"]
        ) { [self] in
            [
                (["hit"], Double(hits.load(ordering: .relaxed))),
                (["miss"], Double(misses.load(ordering: .relaxed))),
                (["bypass"], Double(bypasses.load(ordering: .relaxed))),
            ]
        }
        registry.gauge(
            "iap_user_cache_bytes", help: "Memory held by cached user documents (capacity: IAP_LEDGER_USER_CACHE_MB)."
        ) { [self] in Double(stats.bytes) }
    }
}
