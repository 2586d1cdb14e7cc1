import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Prorated refunds (App Store Server API 1.19, api.md §3.1) through HTTP: Apple's signed
/// `revocationPercentage` reaches the log, the balance takes back that share rounded down, the
/// change feed says so, a reversal restores it, and a replay agrees. Figures worked out by hand.
@Suite(.tags(.database)) final class ProratedRefundServiceTests {
    let service: TestService
    let api: ServiceHTTPClient

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    /// A consumable of 100 coins × `quantity`, bought a minute ago.
    func coins(_ id: String, quantity: Int64 = 1) -> [String: JSONValue] {
        let bought = service.clock.now - 60 * second
        return Mint.transaction(
            id, product: TestService.coins, type: "Consumable", purchase: bought, expires: nil, signed: bought,
            ["quantity": .int(quantity)])
    }

    /// `transaction` re-signed as Apple refunds it: prorated when `percentage` is given.
    func refunded(_ transaction: [String: JSONValue], percentage: Int64?, at: Int64) -> [String: JSONValue] {
        var t = transaction
        t["signedDate"] = .int(at)
        t["revocationDate"] = .int(at)
        t["revocationReason"] = .int(0)
        t["revocationType"] = .string(percentage == nil ? "REFUND_FULL" : "REFUND_PRORATED")
        if let percentage { t["revocationPercentage"] = .int(percentage) }
        return t
    }

    func notify(_ type: String, _ transaction: [String: JSONValue]) throws {
        let response = try api.notify(Mint.notification(type, transaction: transaction))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["result"]?.stringValue == "recorded", "\(response.text)")
    }

    func balance(_ user: String) throws -> Int64? { try api.user(user)["balances"]?["coins"]?.int64Value }

    func replayChangesNobody() throws {
        let replay = try api.post("/v1/admin/replay", ["dryRun": .bool(true)])
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
    }

    @Test func aHalfRefundOf100CoinsTakesBack50AndItsReversalGivesThemBack() throws {
        let now = service.clock.now
        let bought = coins("1100001")
        #expect(
            try api.purchase("u-half", Mint.signed(bought)).json["customer"]?["balances"]?["coins"]?.int64Value == 100)

        try notify("REFUND", refunded(bought, percentage: 50_000, at: now - 2 * second))
        #expect(try balance("u-half") == 50, "100 − 100 × 50000 / 100000")
        // Apple's share is in the log, under Apple's name.
        let chain = try api.get("/v1/subscriptions/1100001").json
        #expect(chain["transactions"]?[0]?["revocationPercentage"]?.int64Value == 50_000, "\(chain)")
        #expect(chain["transactions"]?[0]?["revocationType"]?.stringValue == "REFUND_PRORATED")

        var reversed = bought
        reversed["signedDate"] = .int(now - second)
        try notify("REFUND_REVERSED", reversed)
        #expect(try balance("u-half") == 100, "50 + the 50 taken back")

        let changes = try ChangeFeedTests.feed(api, userId: "u-half", settled: service.conninfo)
        #expect(ChangeFeedTests.types(changes) == ["CONSUMABLE_PURCHASE", "REFUND", "REFUND_REVERSED"])
        let refund = changes[1]["details"]
        #expect(refund?["amount"]?.int64Value == 50)
        #expect(refund?["balance"]?.int64Value == 50)
        #expect(refund?["revocationPercentage"]?.int64Value == 50_000)
        #expect(refund?["currency"]?.stringValue == "coins")
        let reversal = changes[2]["details"]
        #expect(reversal?["amount"]?.int64Value == 50)
        #expect(reversal?["balance"]?.int64Value == 100)

        try replayChangesNobody()
        #expect(try balance("u-half") == 100)
    }

    @Test func eachShareIsRoundedDownAndNoShareTakesAll() throws {
        let now = service.clock.now
        let third = coins("1100011")
        let triple = coins("1100012", quantity: 3)
        let whole = coins("1100013")
        #expect(try api.purchase("u-third", Mint.signed(third)).status == 200)
        #expect(try api.purchase("u-triple", Mint.signed(triple)).status == 200)
        #expect(try api.purchase("u-whole", Mint.signed(whole)).status == 200)
        #expect(try balance("u-triple") == 300)

        try notify("REFUND", refunded(third, percentage: 33_333, at: now - second))
        try notify("REFUND", refunded(triple, percentage: 50_000, at: now - second))
        try notify("REFUND", refunded(whole, percentage: nil, at: now - second))
        #expect(try balance("u-third") == 67, "100 × 33.333 % = 33.333 → 33 taken back, 67 kept")
        #expect(try balance("u-triple") == 150, "300 × 50 % = 150 taken back")
        #expect(try balance("u-whole") == 0, "no share: all 100 taken back")

        // A debit meets the balance the share left: 67 is all there is.
        let overdraw = try api.debit("u-third", "coins", amount: 68, key: "too-much")
        #expect(overdraw.status == 409)
        #expect(overdraw.json["balance"]?.int64Value == 67)

        // The log alone gives the same balances.
        try replayChangesNobody()
        #expect(try balance("u-third") == 67)
        #expect(try balance("u-triple") == 150)
        #expect(try balance("u-whole") == 0)
    }

    @Test func aProratedRefundOfASubscriptionEndsAccessAtTheRevocationDate() throws {
        let now = service.clock.now
        let period = Mint.transaction(
            "1100021", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day)
        #expect(try api.purchase("u-sub", Mint.signed(period)).status == 200)
        #expect(try api.user("u-sub")["entitlements"]?["pro"]?["active"]?.boolValue == true)

        let revokedAt = now - second
        try notify("REFUND", refunded(period, percentage: 50_000, at: revokedAt))
        let document = try api.user("u-sub")
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == false, "half the money, none of the access")
        let subscription = try #require(document["subscriptions"]?[0])
        #expect(subscription["status"]?.stringValue == "revoked")
        #expect(subscription["revokedAt"]?.stringValue == RFC3339.format(revokedAt))
        #expect(subscription["expiresAt"]?.stringValue == RFC3339.format(now + 29 * day))
        try replayChangesNobody()
    }
}
