import EventStore
import Foundation
import JSON
import TestSupport
import Testing

/// The feed's order across a transaction id gaining a digit. The cursor's `tx` is read out as
/// text; while that output column was named `tx`, `ORDER BY tx` sorted the text ("1003" before
/// "960"): a page spanning a power of ten came out of order and the next page repeated a change.
/// Seen first in the release pass, whose test cluster's xids happened to cross 1000 mid-test.
@Suite(.tags(.database)) final class ChangeFeedOrderTests {
    let service: TestService
    let api: ServiceHTTPClient

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    @Test func changesEitherSideOfAPowerOfTenComeOutInCommitOrder() throws {
        let now = service.clock.now
        func buy(_ id: String) throws {
            let fields = Mint.transaction(
                id, product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil,
                signed: now - hour)
            #expect(try api.purchase("u-order", Mint.signed(fields)).status == 200)
        }
        try buy("3000901")
        let connection = try Connection(service.conninfo)
        let current = try #require(
            try connection.query("SELECT pg_current_xact_id()::text")[0, 0].flatMap { UInt64($0) })
        // Every subtransaction that writes takes an xid of its own: use up the rest of this power of ten.
        var power: UInt64 = 10
        while power <= current { power *= 10 }
        try connection.executeScript(
            """
            CREATE TEMP TABLE burn (n int);
            DO $$ BEGIN FOR i IN 1..\(power - current + 1) LOOP
                BEGIN INSERT INTO burn VALUES (i); EXCEPTION WHEN others THEN NULL; END;
            END LOOP; END $$;
            """)
        try buy("3000902")

        let changes = try ChangeFeedTests.feed(api, userId: "u-order", settled: service.conninfo)
        let ids = changes.compactMap { $0["transactionId"]?.stringValue }
        #expect(ids == ["3000901", "3000902"], "\(ChangeFeedTests.trace(changes))")
        let txs = changes.compactMap { $0["cursor"]?.stringValue?.split(separator: "-").first.flatMap { UInt64($0) } }
        #expect(txs.count == 2 && txs[0] < power && txs[1] >= power, "the two changes straddle \(power): \(txs)")
        // The whole feed too (the page query without userId), and the head a long poll starts from.
        let all = try ChangeFeedTests.feed(api, settled: service.conninfo).compactMap {
            $0["transactionId"]?.stringValue
        }
        #expect(all == ["3000901", "3000902"])
        let last = try #require(changes.last?["cursor"]?.stringValue)
        let waited = try api.get("/v1/changes?after=\(last)&wait=1")
        #expect(waited.status == 200)
        #expect(waited.json["changes"]?.arrayValue?.isEmpty == true, "nothing after the last change: \(waited.text)")
    }
}
