import Testing

@testable import Infrastructure
@testable import Reads
@testable import Service

/// The in-process document store on its own: time windows, the ticket race, the memory bound.
@Suite struct UserDocumentCacheTests {
    func judged(_ text: String, from: Int64 = 0, until: Int64? = nil) -> UserDocuments.Judged {
        UserDocuments.Judged(document: Array(text.utf8), validFrom: from, validUntil: until)
    }

    @Test func aDocumentIsServedOnlyInsideTheWindowItIsTrueFor() {
        let cache = UserDocumentCache(capacityBytes: 1 << 20)
        cache.insert(judged("a", from: 100, until: 200), for: "u", ticket: cache.ticket(for: "u"))
        #expect(cache.document(for: "u", at: 99) == nil)
        #expect(cache.document(for: "u", at: 100) == Array("a".utf8))
        #expect(cache.document(for: "u", at: 199) == Array("a".utf8))
        #expect(cache.document(for: "u", at: 200) == nil)
        cache.insert(judged("b", from: 100), for: "v", ticket: cache.ticket(for: "v"))
        #expect(cache.document(for: "v", at: Int64.max) == Array("b".utf8))
    }

    @Test func aFetchThatRacedAnInvalidationIsNotStored() {
        let cache = UserDocumentCache(capacityBytes: 1 << 20)
        let ticket = cache.ticket(for: "u")
        // The document changes in PostgreSQL after the read fetched it; the check drops "u"…
        cache.invalidate(["u"])
        // …so the fetched (possibly old) document must not be kept.
        cache.insert(judged("old"), for: "u", ticket: ticket)
        #expect(cache.document(for: "u", at: 1) == nil)
        let fresh = cache.ticket(for: "u")
        cache.insert(judged("new"), for: "u", ticket: fresh)
        #expect(cache.document(for: "u", at: 1) == Array("new".utf8))
        cache.invalidateAll()
        #expect(cache.document(for: "u", at: 1) == nil)
        cache.insert(judged("stale"), for: "u", ticket: fresh)
        #expect(cache.document(for: "u", at: 1) == nil)
    }

    @Test func invalidatingOneUserKeepsTheOthers() {
        let cache = UserDocumentCache(capacityBytes: 1 << 20)
        for id in ["a", "b", "c"] { cache.insert(judged(id), for: id, ticket: cache.ticket(for: id)) }
        cache.invalidate(["b"])
        #expect(cache.document(for: "a", at: 1) == Array("a".utf8))
        #expect(cache.document(for: "b", at: 1) == nil)
        #expect(cache.document(for: "c", at: 1) == Array("c".utf8))
    }

    @Test func memoryStaysWithinTheCapacity() {
        let capacity = 64 * 1024
        let cache = UserDocumentCache(capacityBytes: capacity, shardCount: 4)
        let document = String(repeating: "x", count: 500)
        for index in 0..<2_000 {
            let id = "user-\(index)"
            cache.insert(judged(document), for: id, ticket: cache.ticket(for: id))
        }
        let stats = cache.stats
        #expect(stats.bytes <= capacity)
        #expect(stats.entries > 50)  // evicts what overflows, not everything
        #expect(cache.document(for: "user-1999", at: 1) == Array(document.utf8))  // the newest is kept
    }
}
