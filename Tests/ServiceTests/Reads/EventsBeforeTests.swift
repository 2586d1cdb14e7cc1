import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `GET /v1/users/{userId}/events?before=SEQ`: the history newest first, paged backwards (the
/// console's timeline), a window with `after`, and its bad input.
@Suite(.tags(.database)) final class EventsBeforeTests {
    let service: TestService

    init() throws { service = try TestService() }

    deinit { service.stop() }

    @Test func pagesBackwardsNewestFirstWithinAfterAndRefusesBadSeqs() throws {
        let api = service.client()
        let now = service.clock.now
        let coins = Mint.transaction(
            "5200001", product: TestService.coins, type: "Consumable", purchase: now, expires: nil, signed: now)
        #expect(try api.purchase("u-before", Mint.signed(coins)).status == 200)
        for index in 0..<4 {
            #expect(try api.debit("u-before", "coins", amount: 1, key: "b-\(index)").status == 200)
        }
        let forwards = try api.events("u-before").compactMap { $0["seq"]?.int64Value }
        #expect(forwards.count >= 5)
        var backwards: [Int64] = []
        var before = "9223372036854775807"
        while true {
            let page = try api.get("/v1/users/u-before/events?before=\(before)&limit=2")
            #expect(page.status == 200)
            let seqs = (page.json["events"]?.arrayValue ?? []).compactMap { $0["seq"]?.int64Value }
            #expect(seqs.count <= 2)
            backwards += seqs
            guard let next = page.json["next"]?.int64Value else { break }
            #expect(next == seqs.last)
            before = String(next)
        }
        #expect(backwards == forwards.reversed())
        // With after too: the window between, newest first.
        let window = try api.get("/v1/users/u-before/events?after=\(forwards[0])&before=\(forwards[3])")
        #expect(
            (window.json["events"]?.arrayValue ?? []).compactMap { $0["seq"]?.int64Value } == [
                forwards[2], forwards[1],
            ])
        #expect(try api.get("/v1/users/u-before/events?before=0").status == 400)
        #expect(try api.get("/v1/users/u-before/events?before=x").status == 400)
    }
}
