import JSON
import Testing

@testable import Ledger

@Suite struct CustomerViewTests {
    @Test func anEntitlementStaysActiveWhileAnyProductGrantingItGivesAccess() throws {
        var world = World()
        try world.claim("1000", for: "u-1")
        try world.claim("2000", for: "u-1")
        let monthly = F.period("1000", start: F.t0)
        let yearly = F.period("2000", otid: "2000", product: F.yearly, start: F.t0, length: 365 * F.day)
        world.record(monthly)
        world.record(yearly)
        let doc = world.customer(at: monthly.expiresDate! + 1)
        #expect(doc.entitlements["pro"]?.active == true)
        #expect(doc.entitlements["pro"]?.originalTransactionId == "2000")
        #expect(doc.subscriptions.map(\.status) == [.expired, .active])
    }

    @Test func aLapsedEntitlementStaysListedAsInactive() throws {
        var world = World()
        try world.claim("1000", for: "u-1")
        let p = F.period("1000", start: F.t0)
        world.record(p)
        let pro = world.customer(at: p.expiresDate!).entitlements["pro"]
        #expect(pro?.active == false)
        #expect(pro?.expiresAt == p.expiresDate)
    }

    @Test func aNonConsumableAndASubscriptionGrantingOneEntitlement() throws {
        var world = World()
        try world.claim("1000", for: "u-1")
        try world.claim("3000", for: "u-1")
        world.record(F.period("1000", start: F.t0))
        world.record(F.nonConsumable("3000", product: F.lifetime))
        let pro = world.customer(at: F.t0 + 2 * F.month).entitlements["pro"]
        #expect(pro?.active == true)
        #expect(pro?.source == .nonConsumable)
        #expect(pro?.expiresAt == nil)
    }

    @Test func aConsumableRefundedAfterSpendingShowsTheDebt() throws {
        var world = World()
        try world.claim("5000", for: "u-1")
        world.record(F.consumable("5000"))
        try world.debit("u-1", "coins", 70, key: "sword")
        world.record(F.consumable("5000", signed: F.t0 + F.day, revoked: F.t0 + F.day))
        #expect(world.customer(at: F.t0 + 2 * F.day).balances == ["coins": -70])
        #expect(throws: Rejection.insufficientBalance(balance: -70)) { try world.debit("u-1", "coins", 1, key: "more") }
    }

    @Test func consumablesCreditGrantsTimesQuantityOncePerTransaction() throws {
        var world = World()
        try world.claim("5000", for: "u-1")
        world.record(F.consumable("5000", quantity: 2))
        world.record(F.consumable("5000", quantity: 2))
        world.record(F.note("ONE_TIME_CHARGE", signed: F.t0 + 1, otid: "5000"))
        #expect(world.balance("u-1", "coins") == 200)
    }

    @Test func unknownProductsGrantTheirOwnIdAndConsumablesCreditTheirOwnBalance() throws {
        var world = World()
        try world.claim("8000", for: "u-1")
        try world.claim("8001", for: "u-1")
        try world.claim("8002", for: "u-1")
        world.record(F.oneOff("8000", product: "com.x.gems", type: "Consumable", quantity: 5))
        world.record(F.oneOff("8001", product: "com.x.skin", type: "Non-Consumable"))
        world.record(F.period("8002", otid: "8002", product: "com.x.vip", start: F.t0))
        let doc = world.customer(at: F.t0 + 1)
        #expect(doc.balances == ["com.x.gems": 5])
        #expect(doc.entitlements["com.x.skin"]?.active == true)
        #expect(doc.entitlements["com.x.vip"]?.source == .subscription)
    }

    @Test func aUserNeverSeenHasAnEmptyDocument() {
        let doc = World().customer("nobody", at: F.t0)
        #expect(doc == Customer(userId: "nobody"))
        #expect(
            String(decoding: doc.jsonBytes(), as: UTF8.self)
                == #"{"userId":"nobody","entitlements":{},"subscriptions":[],"nonConsumables":[],"balances":{},"version":0}"#
        )
    }

    @Test func nextChangeIsTheEarliestFutureExpiryOrGraceEnd() throws {
        var world = World()
        try world.claim("1000", for: "u-1")
        try world.claim("2000", for: "u-1")
        let p = F.period("1000", start: F.t0)
        world.record(p)
        world.record(F.period("2000", otid: "2000", product: F.yearly, start: F.t0, length: 365 * F.day))
        let grace = p.expiresDate! + 3 * F.day
        world.record(F.renewal(signed: p.expiresDate!, grace: grace, retry: true))
        let account = world.accounts["u-1"]!
        #expect(CustomerView.nextChange(account: account, chains: world.chains, after: F.t0) == p.expiresDate)
        #expect(CustomerView.nextChange(account: account, chains: world.chains, after: p.expiresDate!) == grace)
        #expect(CustomerView.nextChange(account: account, chains: world.chains, after: grace) == F.t0 + 365 * F.day)
    }

    @Test func theDocumentRendersAsApiMdSaysWithMillisecondDates() throws {
        var world = World()
        try world.claim("2000000001", for: "u-1")
        try world.claim("6000", for: "u-1")
        let expires = RFC3339.parse("2026-12-29T10:00:00.000Z")!
        world.record(F.period("2000000001", otid: "2000000001", start: expires - F.month, expires: expires))
        world.record(F.renewal(otid: "2000000001", signed: expires - F.month))
        world.record(F.nonConsumable("6000", at: F.t0))
        let bytes = world.customer(at: expires - 1).jsonBytes()
        let json = try JSONValue.parse(bytes)
        #expect(json["userId"]?.stringValue == "u-1")
        #expect(json["version"]?.int64Value == 2)
        let pro = json["entitlements"]?["pro"]
        #expect(pro?["expiresAt"]?.stringValue == "2026-12-29T10:00:00.000Z")
        #expect(pro?["active"]?.boolValue == true)
        #expect(pro?["willRenew"]?.boolValue == true)
        #expect(pro?["inGracePeriod"]?.boolValue == false)
        #expect(pro?["source"]?.stringValue == "subscription")
        let sub = json["subscriptions"]?.arrayValue?.first
        #expect(sub?["status"]?.stringValue == "active")
        #expect(sub?["gracePeriodExpiresAt"]?.isNull == true)
        #expect(sub?["ownership"]?.stringValue == "PURCHASED")
        #expect(sub?["environment"]?.stringValue == "Production")
        let nc = json["nonConsumables"]?.arrayValue?.first
        #expect(nc?["purchasedAt"]?.stringValue == "2026-01-01T00:00:00.000Z")
        #expect(nc?["revokedAt"]?.isNull == true)
        #expect(json["balances"]?.objectValue == [:])
    }
}
