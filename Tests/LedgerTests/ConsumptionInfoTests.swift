import JSON
import Testing

@testable import Ledger

/// What a CONSUMPTION_REQUEST is answered with, from the ledger alone (docs/api.md §5): debits
/// spend the oldest credits first, refunded credits absorb nothing, and Apple's rules on the
/// body hold.
@Suite struct ConsumptionInfoTests {
    let later = F.t0 + F.day

    func info(_ world: World, _ transactionId: String, user: String = "u-1", at now: Int64? = nil) -> ConsumptionInfo? {
        ConsumptionInfo.compute(
            transactionId: transactionId, account: world.accounts[user] ?? .initial, chains: world.chains,
            catalog: world.catalog, at: now ?? F.t0 + 10 * F.day)
    }

    @Test func aConsumableWith30Of100CoinsSpentIs30Percent() throws {
        var world = World()
        try world.claim("5000", for: "u-1")
        world.record(F.consumable("5000"))
        try world.debit("u-1", "coins", 30, key: "potion")
        let answer = try #require(info(world, "5000"))
        #expect(answer.deliveryStatus == .delivered)
        #expect(answer.productType == .consumable)
        #expect(answer.consumptionPercentage == 30_000)
    }

    @Test func debitsSpendTheOldestCreditFirstAcrossTwoCredits() throws {
        var world = World()
        try world.claim("5001", for: "u-1")
        try world.claim("5002", for: "u-1")
        world.record(F.consumable("5002", at: later))  // recorded first, bought later
        world.record(F.consumable("5001", at: F.t0))
        try world.debit("u-1", "coins", 60, key: "a", at: later + 1)
        try world.debit("u-1", "coins", 70, key: "b", at: later + 2)
        #expect(info(world, "5001")?.consumptionPercentage == 100_000)
        #expect(info(world, "5002")?.consumptionPercentage == 30_000)
    }

    @Test func aDebitLargerThanTheFirstCreditSpillsIntoTheNext() throws {
        var world = World()
        try world.claim("5001", for: "u-1")
        try world.claim("5002", for: "u-1")
        world.record(F.consumable("5001", at: F.t0))
        world.record(F.consumable("5002", quantity: 2, at: later))  // 200 coins
        try world.debit("u-1", "coins", 150, key: "castle", at: later + 1)
        #expect(info(world, "5001")?.consumptionPercentage == 100_000)
        #expect(info(world, "5002")?.consumptionPercentage == 25_000, "50 of 200")
    }

    @Test func creditsBoughtAtTheSameInstantAreOrderedByTransactionId() throws {
        var world = World()
        for tid in ["5009", "5010"] {
            try world.claim(tid, for: "u-1")
            world.record(F.consumable(tid, at: F.t0))
        }
        try world.debit("u-1", "coins", 120, key: "x")
        #expect(info(world, "5009")?.consumptionPercentage == 100_000)
        #expect(info(world, "5010")?.consumptionPercentage == 20_000)
    }

    @Test func aRefundedCreditAbsorbsNothingAndSaysUndelivered() throws {
        var world = World()
        try world.claim("5001", for: "u-1")
        try world.claim("5002", for: "u-1")
        world.record(F.consumable("5001", at: F.t0))
        try world.debit("u-1", "coins", 80, key: "sword", at: F.t0 + 1)
        world.record(F.consumable("5001", signed: later, revoked: later))
        world.record(F.consumable("5002", at: later + 1))
        // The 80 spent from the refunded purchase is debt the next purchase paid (balance 20).
        #expect(world.balance("u-1", "coins") == 20)
        #expect(info(world, "5002")?.consumptionPercentage == 80_000)
        let refunded = try #require(info(world, "5001"))
        #expect(refunded.deliveryStatus == .undeliveredOther)
        #expect(refunded.consumptionPercentage == 0, "Apple: 0 unless DELIVERED")
    }

    @Test func adminCreditsTakeTheirPlaceInTheQueueByTime() throws {
        var world = World()
        try world.command(
            "u-1",
            .credit(
                userId: "u-1", currency: "coins", amount: 50, idempotencyKey: "sorry",
                reason: "outage", at: F.t0 - 1))
        try world.claim("5001", for: "u-1")
        world.record(F.consumable("5001", at: F.t0))
        try world.debit("u-1", "coins", 75, key: "a", at: F.t0 + 1)
        #expect(info(world, "5001")?.consumptionPercentage == 25_000, "the older 50 free coins went first")
    }

    @Test func nothingSpentIsZeroAndDebitsAfterNowDoNotCount() throws {
        var world = World()
        try world.claim("5001", for: "u-1")
        world.record(F.consumable("5001", at: F.t0))
        #expect(info(world, "5001")?.consumptionPercentage == 0)
        try world.debit("u-1", "coins", 40, key: "a", at: later)
        #expect(info(world, "5001", at: later - 1)?.consumptionPercentage == 0)
        #expect(info(world, "5001", at: later)?.consumptionPercentage == 40_000)
    }

    @Test func otherCurrenciesAndOtherUsersDoNotCount() throws {
        var world = World()
        world.catalog.products["com.example.gems"] = Product(type: .consumable, grants: ["gems": 10])
        try world.claim("5001", for: "u-1")
        try world.claim("6001", for: "u-1")
        try world.claim("7001", for: "u-2")
        world.record(F.consumable("5001", at: F.t0))
        world.record(F.consumable("6001", product: "com.example.gems", at: F.t0))
        world.record(F.consumable("7001", at: F.t0))
        try world.debit("u-1", "gems", 5, key: "g")
        try world.debit("u-2", "coins", 100, key: "c")
        #expect(info(world, "5001")?.consumptionPercentage == 0)
        #expect(info(world, "6001")?.consumptionPercentage == 50_000)
        #expect(info(world, "7001", user: "u-2")?.consumptionPercentage == 100_000)
    }

    @Test func aHugeCreditDoesNotOverflowThePercentage() throws {
        var world = World()
        world.catalog.products[F.coins] = Product(type: .consumable, grants: ["coins": 4_000_000_000_000_000])
        try world.claim("5001", for: "u-1")
        world.record(F.consumable("5001"))
        try world.debit("u-1", "coins", 1_000_000_000_000_000, key: "a")
        #expect(info(world, "5001")?.consumptionPercentage == 25_000)
    }

    @Test func nonConsumablesAndSubscriptionsAreDeliveredWithoutAPercentage() throws {
        var world = World()
        try world.claim("3000", for: "u-1")
        try world.claim("1000", for: "u-1")
        world.record(F.nonConsumable("3000"))
        world.record(F.period("1000", start: F.t0))
        world.record(F.period("1001", start: F.t0 + F.month))
        let removeAds = try #require(info(world, "3000"))
        #expect(
            removeAds
                == ConsumptionInfo(
                    transactionId: "3000", productType: .nonConsumable, deliveryStatus: .delivered,
                    consumptionPercentage: nil))
        let renewal = try #require(info(world, "1001"))
        #expect(renewal.productType == .subscription)
        #expect(renewal.deliveryStatus == .delivered)
        #expect(renewal.consumptionPercentage == nil)
        // Expired by now, still delivered: it was granted for its period.
        #expect(info(world, "1000", at: F.t0 + 3 * F.month)?.deliveryStatus == .delivered)
    }

    @Test func aRevokedNonConsumableOrAnUnclaimedPurchaseIsNotDelivered() throws {
        var world = World()
        try world.claim("3000", for: "u-1")
        world.record(F.nonConsumable("3000", signed: later, revoked: later))
        world.record(F.consumable("5001"))  // nobody claimed it
        #expect(info(world, "3000")?.deliveryStatus == .undeliveredOther)
        #expect(info(world, "3000")?.consumptionPercentage == nil)
        let unclaimed = try #require(info(world, "5001", user: "nobody"))
        #expect(unclaimed.deliveryStatus == .undeliveredOther)
        #expect(unclaimed.consumptionPercentage == 0)
    }

    @Test func anUnknownTransactionIsNil() throws {
        var world = World()
        try world.claim("5001", for: "u-1")
        world.record(F.consumable("5001"))
        #expect(info(world, "9999") == nil)
    }

    @Test func theRequestBodyKeepsApplesRules() throws {
        func body(_ info: ConsumptionInfo, _ preference: ConsumptionInfo.RefundPreference?) throws -> JSONValue {
            try JSONValue.parse(
                info.requestBody(
                    .init(
                        customerConsented: true, sampleContentProvided: false, refundPreference: preference)))
        }
        let coins = ConsumptionInfo(
            transactionId: "5", productType: .consumable, deliveryStatus: .delivered, consumptionPercentage: 30_000)
        #expect(
            try body(coins, .grantProrated) == [
                "customerConsented": true, "consumptionPercentage": .int(30_000), "deliveryStatus": "DELIVERED",
                "refundPreference": "GRANT_PRORATED", "sampleContentProvided": false,
            ])
        // GRANT_PRORATED with 0 % or 100 % would be a 400: the preference is left out.
        var spent = coins
        spent.consumptionPercentage = 100_000
        #expect(try body(spent, .grantProrated)["refundPreference"] == nil)
        #expect(try body(spent, .decline)["refundPreference"] == "DECLINE")
        let subscription = ConsumptionInfo(
            transactionId: "1", productType: .subscription, deliveryStatus: .delivered, consumptionPercentage: nil)
        let subscriptionBody = try body(subscription, .grantProrated)
        #expect(subscriptionBody["consumptionPercentage"] == nil)
        #expect(subscriptionBody["refundPreference"] == "GRANT_PRORATED", "Apple computes a subscription's share")
        let removeAds = ConsumptionInfo(
            transactionId: "3", productType: .nonConsumable, deliveryStatus: .delivered, consumptionPercentage: nil)
        #expect(try body(removeAds, .grantProrated)["refundPreference"] == nil)
        #expect(
            try body(removeAds, nil) == [
                "customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false,
            ])
    }
}
