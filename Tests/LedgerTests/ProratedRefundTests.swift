import JSON
import Testing

@testable import Ledger

/// Prorated refunds (App Store Server API 1.19, api.md §3.1): a consumable refunded with a
/// `revocationPercentage` takes back that share of its credit, rounded down; without one, all
/// of it; a reversal gives back what was taken. Subscriptions and non-consumables end at the
/// revocation date whatever the share. Every figure below is worked out by hand.
@Suite struct ProratedRefundTests {
    let refundedAt = F.t0 + F.day
    let reversedAt = F.t0 + 2 * F.day

    /// A refund of `t` signed at `at`, prorated when `percentage` is given.
    func refunded(_ t: Transaction, at: Int64, percentage: Int64?) -> Transaction {
        var t = t
        t.signedDate = at
        t.revocationDate = at
        t.revocationReason = 0
        t.revocationType = percentage == nil ? "REFUND_FULL" : "REFUND_PRORATED"
        t.revocationPercentage = percentage
        return t
    }

    /// u-1 owns consumable 5000 (`quantity` × 100 coins), then Apple refunds it.
    func coins(quantity: Int64 = 1, percentage: Int64?) throws -> World {
        var world = World()
        try world.claim("5000", for: "u-1")
        let bought = F.consumable("5000", quantity: quantity)
        world.record(bought)
        world.record(refunded(bought, at: refundedAt, percentage: percentage))
        return world
    }

    // MARK: The rule

    @Test func theShareTakenBackIsRoundedDownAndNoneMeansAll() {
        let bought = F.consumable("5000")
        #expect(bought.takenBack(of: 100) == 0, "not revoked: nothing taken back")
        #expect(refunded(bought, at: refundedAt, percentage: 50_000).takenBack(of: 100) == 50, "100 × 50 % = 50")
        #expect(
            refunded(bought, at: refundedAt, percentage: 33_333).takenBack(of: 100) == 33,
            "100 × 33.333 % = 33.333 → 33")
        #expect(refunded(bought, at: refundedAt, percentage: 33_333).kept(of: 100) == 67, "the customer keeps 100 − 33")
        #expect(refunded(bought, at: refundedAt, percentage: 50_000).takenBack(of: 300) == 150, "300 × 50 % = 150")
        #expect(refunded(bought, at: refundedAt, percentage: 100_000).takenBack(of: 100) == 100)
        #expect(refunded(bought, at: refundedAt, percentage: nil).takenBack(of: 100) == 100, "no share: all of it")
        #expect(refunded(bought, at: refundedAt, percentage: 1).takenBack(of: 100) == 0, "100 × 0.001 % = 0.001 → 0")
        // Shares Apple never sends are bounded, never minting or losing more than the credit.
        #expect(refunded(bought, at: refundedAt, percentage: 150_000).takenBack(of: 100) == 100)
        #expect(refunded(bought, at: refundedAt, percentage: -5).takenBack(of: 100) == 0)
        // 10¹⁵ × 50000 overflows Int64 on the way; the share (5·10¹⁴) does not.
        #expect(
            refunded(bought, at: refundedAt, percentage: 50_000).takenBack(of: 1_000_000_000_000_000)
                == 500_000_000_000_000)
    }

    // MARK: Balances

    @Test func aHalfRefundOf100CoinsTakesBack50() throws {
        let world = try coins(percentage: 50_000)
        #expect(world.balance("u-1", "coins") == 50, "100 − 100 × 50000 / 100000 = 50")
        #expect(world.customer(at: refundedAt + 1).balances == ["coins": 50])
    }

    @Test func a33333RefundOf100CoinsTakesBack33RoundedDown() throws {
        let world = try coins(percentage: 33_333)
        #expect(world.balance("u-1", "coins") == 67, "100 − floor(33.333) = 67")
    }

    @Test func aHalfRefundOfThreeTimes100CoinsTakesBack150() throws {
        let world = try coins(quantity: 3, percentage: 50_000)
        #expect(world.balance("u-1", "coins") == 150, "300 − 300 × 50 % = 150")
    }

    @Test func aRefundWithoutAPercentageTakesBackAll() throws {
        let world = try coins(percentage: nil)
        #expect(world.balance("u-1", "coins") == 0, "100 − 100")
        #expect(world.customer(at: refundedAt + 1).balances == ["coins": 0])
    }

    @Test func aReversedHalfRefundRestoresThe50InEitherArrivalOrder() throws {
        let bought = F.consumable("5000")
        let refund = refunded(bought, at: refundedAt, percentage: 50_000)
        // Apple re-signs the transaction as it was: no revocation fields, a newer signedDate.
        var reversal = bought
        reversal.signedDate = reversedAt
        for order in [[bought, refund, reversal], [reversal, refund, bought], [refund, reversal, bought]] {
            var world = World()
            try world.claim("5000", for: "u-1")
            for fact in order { world.record(fact) }
            #expect(world.balance("u-1", "coins") == 100, "50 + the 50 given back; order \(order.map(\.signedDate))")
        }
        var world = World()
        try world.claim("5000", for: "u-1")
        world.record(bought)
        world.record(refund)
        #expect(world.balance("u-1", "coins") == 50)
        world.record(reversal)
        #expect(world.balance("u-1", "coins") == 100)
    }

    @Test func spentCoinsThenAHalfRefundShowTheDebt() throws {
        var world = World()
        try world.claim("5000", for: "u-1")
        world.record(F.consumable("5000"))
        try world.debit("u-1", "coins", 70, key: "sword")
        world.record(refunded(F.consumable("5000"), at: refundedAt, percentage: 50_000))
        #expect(world.balance("u-1", "coins") == -20, "100 − 70 − 50")
        #expect(throws: Rejection.insufficientBalance(balance: -20)) { try world.debit("u-1", "coins", 1, key: "more") }
    }

    // MARK: Access ends whatever the share

    @Test func aProratedRefundOfASubscriptionEndsAccessAtTheRevocationDate() throws {
        var world = World()
        try world.claim("1000", for: "u-1")
        let period = F.period("1000", start: F.t0)
        world.record(period)
        #expect(world.pro(at: refundedAt - 1))
        world.record(refunded(period, at: refundedAt, percentage: 50_000))
        #expect(world.status(at: refundedAt) == .revoked)
        #expect(!world.pro(at: refundedAt), "half the money back, all the access gone")
        let view = try #require(world.customer(at: refundedAt).subscriptions.first)
        #expect(view.revokedAt == refundedAt)
        #expect(view.expiresAt == F.t0 + F.month, "the period's end is not what ends it")
    }

    @Test func aProratedRefundOfANonConsumableEndsOwnership() throws {
        var world = World()
        try world.claim("3000", for: "u-1")
        let bought = F.nonConsumable("3000")
        world.record(bought)
        world.record(refunded(bought, at: refundedAt, percentage: 25_000))
        let doc = world.customer(at: refundedAt)
        #expect(doc.entitlements["no_ads"]?.active == false)
        #expect(doc.nonConsumables.first?.revokedAt == refundedAt)
    }

    // MARK: The change feed

    @Test func theFeedSaysWhatTheRefundTookAndWhatItsReversalGaveBack() {
        let bought = F.consumable("5000", quantity: 3)
        var reversal = bought
        reversal.signedDate = reversedAt
        var run = ChangeRun(catalog: Scenario.catalog, users: ["u-1"])
        run.deliver(.post("u-1", [bought], at: F.t0))
        run.deliver(
            .notify(
                "REFUND", at: refundedAt, otid: "5000",
                transaction: refunded(bought, at: refundedAt, percentage: 33_333)))
        run.deliver(.notify("REFUND_REVERSED", at: reversedAt, otid: "5000", transaction: reversal))
        let changes = run.changes("u-1")
        #expect(changes.map(\.type) == [.consumablePurchase, .refund, .refundReversed])
        // 300 × 33333 / 100000 = 99.999 → 99 taken back; 201 left; the reversal gives the 99 back.
        #expect(
            changes[1].details == [
                "currency": .string("coins"), "amount": .number("99"), "balance": .number("201"),
                "revocationPercentage": .number("33333"),
            ])
        #expect(
            changes[2].details == ["currency": .string("coins"), "amount": .number("99"), "balance": .number("300")])
    }

    @Test func aFullRefundAnnouncesTheWholeCreditWithoutAShare() {
        var run = ChangeRun(catalog: Scenario.catalog, users: ["u-1"])
        run.deliver(.post("u-1", [F.consumable("5000")], at: F.t0))
        run.deliver(
            .notify(
                "REFUND", at: refundedAt, otid: "5000",
                transaction: refunded(F.consumable("5000"), at: refundedAt, percentage: nil)))
        #expect(
            run.changes("u-1").last?.details == [
                "currency": .string("coins"), "amount": .number("100"), "balance": .number("0"),
            ])
    }

    @Test func aRefundReSignedWithALargerShareAnnouncesTheDifference() {
        let bought = F.consumable("5000")
        var run = ChangeRun(catalog: Scenario.catalog, users: ["u-1"])
        run.deliver(.post("u-1", [bought], at: F.t0))
        run.deliver(
            .notify(
                "REFUND", at: refundedAt, otid: "5000",
                transaction: refunded(bought, at: refundedAt, percentage: 50_000)))
        run.deliver(
            .notify(
                "REFUND", at: reversedAt, otid: "5000", transaction: refunded(bought, at: reversedAt, percentage: nil)))
        let last = run.changes("u-1").last
        #expect(last?.type == .refund)
        #expect(last?.details["amount"] == .number("50"), "all 100 now, 50 of it taken before")
        #expect(last?.details["balance"] == .number("0"))
    }

    @Test func aPurchaseFirstSeenHalfRefundedAnnouncesWhatTheCustomerKept() {
        var run = ChangeRun(catalog: Scenario.catalog, users: ["u-1"])
        run.deliver(
            .post("u-1", [refunded(F.consumable("5000"), at: refundedAt, percentage: 50_000)], at: refundedAt))
        let changes = run.changes("u-1")
        #expect(changes.map(\.type) == [.consumablePurchase])
        #expect(changes.first?.details["amount"] == .number("50"))
        #expect(changes.first?.details["balance"] == .number("50"))
    }

    // MARK: Consumption

    @Test func aHalfRefundedCreditAbsorbsOnlyWhatTheCustomerKept() throws {
        var world = World()
        try world.claim("5001", for: "u-1")
        try world.claim("5002", for: "u-1")
        let first = F.consumable("5001", at: F.t0)
        world.record(first)
        world.record(F.consumable("5002", at: F.t0 + F.hour))
        world.record(refunded(first, at: refundedAt, percentage: 50_000))
        try world.debit("u-1", "coins", 80, key: "castle", at: refundedAt + 1)
        // 5001 keeps 50 and is spent first: 50 of the 80; 5002 pays the other 30 of its 100.
        let info = ConsumptionInfo.compute(
            transactionId: "5002", account: world.accounts["u-1"]!, chains: world.chains, catalog: world.catalog,
            at: refundedAt + 2)
        #expect(info?.consumptionPercentage == 30_000)
        #expect(world.balance("u-1", "coins") == 70, "50 + 100 − 80")
    }

    // MARK: Facts and events

    @Test func aRefundReSignsTheTransactionAndTheNewerVersionWins() {
        let bought = F.consumable("5000")
        let refund = refunded(bought, at: refundedAt, percentage: 50_000)
        #expect(refund.supersedes(bought) && !bought.supersedes(refund))
        let state = given([.recordTransaction(refund), .recordTransaction(bought)])
        #expect(state.latest(transactionId: "5000")?.revocationPercentage == 50_000)
        // A copy posted later carries the same content with a newer signedDate: the same fact.
        var copy = refund
        copy.signedDate = reversedAt
        #expect(state.when(.recordTransactionCopy(copy)).isEmpty)
        // Two versions signed in the same millisecond that differ only in the share: the same
        // winner whichever came first.
        let other = refunded(bought, at: refundedAt, percentage: 30_000)
        #expect(refund.supersedes(other) != other.supersedes(refund))
        let one = given([.recordTransaction(refund), .recordTransaction(other)]).latest(transactionId: "5000")
        let two = given([.recordTransaction(other), .recordTransaction(refund)]).latest(transactionId: "5000")
        #expect(one == two)
    }

    /// Stored before the field existed: reads back with no share (a full refund) and encodes to
    /// the very same bytes.
    static let storedRefund =
        #"{"transactionId":"5000","originalTransactionId":"5000","productId":"com.example.game.coins100","bundleId":"com.example.game","type":"Consumable","purchaseDate":1767225600000,"quantity":1,"inAppOwnershipType":"PURCHASED","signedDate":1767312000000,"revocationDate":1767312000000,"revocationReason":0,"revocationType":"REFUND_PRORATED","isUpgraded":false,"environment":"Production"}"#

    @Test func anEventStoredWithoutTheShareReadsAsAFullRefundAndKeepsItsBytes() throws {
        let bytes = Array(Self.storedRefund.utf8)
        let event = try LedgerEvent.decode(type: "TransactionRecorded", schemaVersion: 1, data: bytes)
        guard case .transactionRecorded(let t) = event else {
            Issue.record("not a transaction")
            return
        }
        #expect(t.revocationPercentage == nil)
        #expect(t.revocationDate == F.t0 + F.day)
        #expect(t.takenBack(of: 100) == 100, "what it meant when it was written: all of it")
        #expect(event.encode() == bytes)
    }

    @Test func theShareIsWrittenUnderApplesNameAndReadBack() throws {
        let refund = refunded(F.consumable("5000"), at: refundedAt, percentage: 50_000)
        let bytes = LedgerEvent.transactionRecorded(refund).encode()
        let json = try JSONValue.parse(bytes)
        #expect(json["revocationPercentage"]?.int64Value == 50_000)
        #expect(json["revocationType"]?.stringValue == "REFUND_PRORATED")
        #expect(
            try LedgerEvent.decode(type: "TransactionRecorded", schemaVersion: 1, data: bytes)
                == .transactionRecorded(refund))
        #expect(
            !String(decoding: LedgerEvent.transactionRecorded(F.consumable("5000")).encode(), as: UTF8.self)
                .contains("revocationPercentage"))
    }
}

extension ProratedRefundTests {
    @Test func theScenarioEndsAtTheHandWorkedBalance() throws {
        let scenario = try #require(Scenarios.all.first { $0.name.hasPrefix("prorated refunds of coins") })
        let run = ChangeRun.inOrder(scenario)
        // 100 + 300 − 30 − 50 − 99 + 50 = 271
        #expect(run.customer("u-1", at: scenario.end).balances == ["coins": 271])
        #expect(run.changes("u-1").compactMap { $0.details["amount"]?.int64Value } == [100, 300, 30, 50, 99, 50])
    }
}
