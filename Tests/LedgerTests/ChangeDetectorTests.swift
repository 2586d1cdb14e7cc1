import JSON
import TestSupport
import Testing

@testable import Ledger

/// The change detector's time-driven side (`elapsed`) and the fields of what it emits.
@Suite struct ChangeDetectorTests {
    typealias S = Scenarios
    let t0 = F.t0, day = F.day, hour = F.hour
    var end1: Int64 { S.end1 }
    var end2: Int64 { S.end2 }

    /// u-1 bought p1 at t0 and `facts` were recorded after it.
    func world(_ deliveries: [Delivery], users: [String] = ["u-1"]) -> ChangeRun {
        var run = ChangeRun(catalog: Scenario.catalog, users: users)
        for delivery in deliveries { run.deliver(delivery) }
        return run
    }

    func elapsed(_ run: ChangeRun, _ from: Int64, _ to: Int64, user: String = "u-1", limit: Int = 64) -> [ChangeStep] {
        ChangeDetector.elapsed(
            userId: user, facts: run.facts(user), catalog: run.catalog, from: from, to: to, limit: limit)
    }

    func summary(_ steps: [ChangeStep]) -> [String] {
        steps.map { step in
            "\(step.at - t0): "
                + step.changes.map { "\($0.type.rawValue)\($0.details["status"]?.stringValue.map { "(\($0))" } ?? "")" }
                .joined(separator: " ")
        }
    }

    // MARK: Time

    @Test func expirationFallsExactlyOnExpiresAt() {
        let run = world(
            S.subscribed + [
                .notify("EXPIRED", "VOLUNTARY", at: t0 + day, renewal: S.renewal(at: t0 + day, autoRenew: false))
            ])
        #expect(elapsed(run, t0 + day, end1 - 1).isEmpty)
        let steps = elapsed(run, t0 + day, end1)
        #expect(summary(steps) == ["\(end1 - t0): EXPIRATION(expired)"])
        #expect(steps.first?.at == end1)
        #expect(steps.first?.changes.first?.occurredAt == end1)
        #expect(steps.first?.changes.first?.transactionId == "1000")
        #expect(steps.first?.customer.entitlements["pro"]?.active == false)
        #expect(steps.first?.customer == run.customer("u-1", at: end1).with(version: run.ledger.version(of: "u-1")))
    }

    @Test func aGracePeriodBeginsAtThePeriodsEndAndEndsInBillingRetry() {
        let grace = end1 + 6 * day
        let run = world(
            S.subscribed + [
                .notify(
                    "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: end1 - hour,
                    renewal: S.renewal(at: end1 - hour, grace: grace, retry: true, intent: 2))
            ])
        #expect(
            summary(elapsed(run, end1 - hour, end1 + 30 * day)) == [
                "\(end1 - t0): BILLING_ISSUE(in_grace_period)",
                "\(grace - t0): BILLING_ISSUE(in_billing_retry) EXPIRATION(in_billing_retry)",
            ])
        #expect(elapsed(run, end1 - hour, end1).first?.customer.entitlements["pro"]?.inGracePeriod == true)
    }

    @Test func withoutGraceBillingRetryBeginsAndAccessEndsAtThePeriodsEnd() {
        let run = world(
            S.subscribed + [
                .notify("DID_FAIL_TO_RENEW", at: end1 - hour, renewal: S.renewal(at: end1 - hour, retry: true))
            ])
        #expect(
            summary(elapsed(run, end1 - hour, end1 + day)) == [
                "\(end1 - t0): BILLING_ISSUE(in_billing_retry) EXPIRATION(in_billing_retry)"
            ])
    }

    @Test func anAdminGrantEndsByItself() {
        let until = t0 + 5 * day
        let run = world([
            .command(
                "grant", at: t0, .grant(userId: "u-1", entitlement: "vip", reason: "support", expiresAt: until, at: t0))
        ])
        let steps = elapsed(run, t0, t0 + 10 * day)
        #expect(summary(steps) == ["\(until - t0): EXPIRATION"])
        let change = steps.first?.changes.first
        #expect(change?.entitlementIds == ["vip"])
        #expect(change?.environment == nil)
        #expect(change?.productId == nil && change?.originalTransactionId == nil && change?.transactionId == nil)
    }

    @Test func aGrantEndingWhileAPurchaseStillGivesTheEntitlementEndsNothing() {
        let run = world(
            S.subscribed + [
                .command(
                    "grant", at: t0 + hour,
                    .grant(userId: "u-1", entitlement: "pro", reason: "support", expiresAt: t0 + 5 * day, at: t0 + hour)
                )
            ])
        #expect(elapsed(run, t0 + hour, end1 - 1).isEmpty)
    }

    @Test func aStackOfNonRenewingPassesEndsOnceAtItsEnd() {
        let run = world([
            .post("u-1", [S.pass("9000", at: t0)], at: t0),
            .post("u-1", [S.pass("9001", at: t0 + 10 * day)], at: t0 + 10 * day),
        ])
        let steps = elapsed(run, t0 + 10 * day, t0 + 90 * day)
        #expect(summary(steps) == ["\(60 * day): EXPIRATION(expired)"])
        #expect(steps.first?.changes.first?.transactionId == "9001")
        #expect(steps.first?.changes.first?.entitlementIds == ["vip"])
    }

    /// A user with something due at many instants: two chains in grace and retry, a stack, grants.
    var busy: ChangeRun {
        world(
            S.subscribed + [
                .post(
                    "u-1", [F.period("3000", otid: "3000", product: F.yearly, start: t0 + hour, length: 40 * day)],
                    at: t0 + hour),
                .post("u-1", [S.pass("9000", at: t0 + 2 * hour)], at: t0 + 2 * hour),
                .post("u-1", [S.pass("9001", at: t0 + 3 * hour)], at: t0 + 3 * hour),
                .command(
                    "grant", at: t0 + 4 * hour,
                    .grant(userId: "u-1", entitlement: "plus", reason: "s", expiresAt: t0 + 12 * day, at: t0 + 4 * hour)
                ),
                .command(
                    "grant", at: t0 + 5 * hour,
                    .grant(userId: "u-1", entitlement: "gold", reason: "s", expiresAt: end1, at: t0 + 5 * hour)),
                .notify(
                    "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: end1 - hour,
                    renewal: S.renewal(at: end1 - hour, grace: end1 + 6 * day, retry: true)),
            ])
    }

    @Test func elapsedInTwoPiecesIsElapsedInOne() {
        let run = busy
        let from = t0 + 5 * hour
        let to = t0 + 120 * day
        let whole = elapsed(run, from, to)
        #expect(whole.count == 5)  // plus; end1 (grace, gold); grace end; 3000; the stack
        var instants = whole.map(\.at)
        instants += instants.map { $0 - 1 } + instants.map { $0 + 1 } + [from, to]
        var rng = SplitMix64(seed: 13)
        instants += (0..<20).map { _ in Int64.random(in: from...to, using: &rng) }
        for split in instants {
            let pieces = elapsed(run, from, split) + elapsed(run, split, to)
            #expect(pieces == whole, "split at \(split - t0)")
        }
        #expect(elapsed(run, from, from).isEmpty)
    }

    @Test func nothingIsDueNothingIsEmitted() {
        let run = world(S.subscribed)
        #expect(elapsed(run, t0, end1 - 1).isEmpty)
        #expect(elapsed(run, t0, t0).isEmpty)
        #expect(elapsed(world([]), t0, t0 + 900 * day).isEmpty)
        let forever = world([.post("u-1", [F.nonConsumable("6000")], at: t0)])
        #expect(elapsed(forever, t0, t0 + 900 * day).isEmpty)
    }

    @Test func beyondItsLimitTheLastStepCoversTheRestAtTheLastInstant() {
        var deliveries: [Delivery] = []
        for k in 0..<10 {
            let until = t0 + Int64(k + 1) * day
            deliveries.append(
                .command(
                    "grant \(k)", at: t0,
                    .grant(userId: "u-1", entitlement: "e\(k)", reason: "s", expiresAt: until, at: t0)))
        }
        let run = world(deliveries)
        let steps = elapsed(run, t0, t0 + 30 * day, limit: 3)
        #expect(steps.map(\.at) == [t0 + day, t0 + 2 * day, t0 + 10 * day])
        #expect(steps.flatMap(\.changes).map(\.entitlementIds) == (0..<10).map { ["e\($0)"] })
        #expect(steps.last?.changes.allSatisfy { $0.occurredAt == t0 + 10 * day } == true)
        #expect(elapsed(run, t0, t0 + 30 * day).count == 10)
    }

    // MARK: Details and fields

    @Test func aTransferTellsBothUsersFromAndTo() {
        var p1 = S.p1
        p1.environment = "Sandbox"
        var run = ChangeRun(catalog: Scenario.catalog, users: ["u-1", "u-2"])
        run.deliver(.post("u-1", [p1], at: t0))
        let claimed = run.deliver(.post("u-2", [p1], at: t0 + day))
        #expect(
            claimed.contains(.chainClaimed(userId: "u-2", originalTransactionId: "1000", from: "u-1", at: t0 + day)))
        #expect(claimed.contains(.chainReleased(userId: "u-1", originalTransactionId: "1000", to: "u-2", at: t0 + day)))
        let gained = run.steps["u-2"]!.last!.step
        let lost = run.steps["u-1"]!.last!.step
        for (step, owner) in [(gained, "u-2"), (lost, "u-1")] {
            #expect(step.changes.map(\.type) == [.transfer])
            let change = step.changes[0]
            #expect(change.details == ["from": .string("u-1"), "to": .string("u-2")])
            #expect(change.environment == "Sandbox")
            #expect(change.occurredAt == t0 + day)
            #expect(
                change.productId == F.monthly && change.originalTransactionId == "1000"
                    && change.transactionId == "1000")
            #expect(change.entitlementIds == ["pro"])
            #expect(step.customer.userId == owner)
        }
        #expect(gained.customer.entitlements["pro"]?.active == true)
        #expect(lost.customer.entitlements["pro"] == nil)
    }

    @Test func aProductChangeSaysFromAndToWithTheNewProductsEntitlementsSorted() {
        let run = world(S.all.first { $0.name == "upgrade applies at once" }!.deliveries)
        let change = run.changes("u-1").last!
        #expect(change.type == .productChange)
        #expect(change.details == ["from": .string(F.monthly), "to": .string(F.plus)])
        #expect(change.productId == F.plus && change.transactionId == "1001" && change.originalTransactionId == "1000")
        #expect(change.entitlementIds == ["plus", "pro"])
        #expect(change.environment == "Production")
    }

    @Test func balancesAfterEachConsumableDebitAndRefund() {
        let run = world(S.all.first { $0.name.hasPrefix("consumables") }!.deliveries)
        let changes = run.changes("u-1")
        func line(_ c: ChangeDraft) -> String {
            let d = c.details
            return [
                c.type.rawValue, d["currency"]?.stringValue ?? "", "\(d["amount"]?.int64Value ?? 0)",
                "\(d["balance"]?.int64Value ?? 0)",
            ]
            .joined(separator: " ")
        }
        #expect(
            changes.map(line) == [
                "CONSUMABLE_PURCHASE coins 100 100", "CONSUMABLE_PURCHASE coins 100 200",
                "CONSUMABLE_PURCHASE gems 20 20",
                "BALANCE_DEBIT coins 150 50", "REFUND coins 100 -50",
            ])
        #expect(changes.map(\.environment) == ["Production", "Production", "Production", nil, "Production"])
        #expect(changes[3].details["reason"] == .string("sword"))
        #expect(changes[3].transactionId == nil && changes[3].productId == nil && changes[3].entitlementIds.isEmpty)
        #expect(changes[1].transactionId == "5001" && changes[1].productId == Scenario.bundle)
        #expect(run.customer("u-1", at: S.t0 + 3 * day).balances == ["coins": -50, "gems": 20])
    }

    @Test func grantsAndCreditsHaveNoEnvironment() {
        let run = world(S.all.first { $0.name.hasPrefix("promotional") }!.deliveries)
        let changes = run.changes("u-1")
        #expect(changes.allSatisfy { $0.environment == nil })
        #expect(changes[0].entitlementIds == ["vip"])
        #expect(
            changes[0].details == ["reason": .string("support"), "expiresAt": .string(RFC3339.format(t0 + 10 * day))])
        #expect(changes[2].details["expiresAt"] == .null)
        #expect(changes[3].details == ["reason": .string("abuse")])
        #expect(changes[4].details["balance"]?.int64Value == 25 && changes[4].details["amount"]?.int64Value == 25)
    }

    /// Time's steps are judged under the facts before the write that caught up with them,
    /// the write's own step under the facts after it.
    @Test func everyStepCarriesTheDocumentAfterIt() {
        let scenario = S.all.first { $0.name == "grace period ends in billing retry, then expiry" }!
        var run = ChangeRun(catalog: scenario.catalog, users: scenario.users)
        var checked = 0
        func document(_ facts: ChangeDetector.Facts, at instant: Int64) -> Customer {
            CustomerView.build(
                userId: "u-1", account: facts.account, chains: facts.chains, catalog: run.catalog, at: instant,
                version: facts.version)
        }
        for delivery in scenario.deliveries {
            let before = run.facts("u-1")
            let seen = run.steps["u-1"]?.count ?? 0
            run.deliver(delivery)
            for (step, elapsed) in (run.steps["u-1"] ?? [])[seen...] {
                #expect(step.customer == document(elapsed ? before : run.facts("u-1"), at: step.at))
                checked += 1
            }
        }
        #expect(checked == 3)  // the purchase; the grace period's start; its end
    }

    // MARK: Late and out of order

    func lines(_ run: ChangeRun) -> [String] {
        run.changes("u-1").map { c in
            "\(c.type.rawValue) \(c.transactionId ?? "-")\(c.details["status"]?.stringValue.map { " " + $0 } ?? "")"
        }
    }

    @Test func aSubscriptionFirstSeenWithoutAccessAnnouncesNothing() {
        let run = world([
            .notify(
                "REFUND", at: t0 + 2 * day, otid: "4000",
                transaction: S.revoked(F.period("4000", otid: "4000", start: t0), at: t0 + 2 * day)),
            .post("u-1", [S.p1], at: end1 + day),  // restored long after it lapsed
            .post("u-1", [F.period("4000", otid: "4000", start: t0)], at: end1 + 2 * day),  // refunded before the claim
        ])
        #expect(run.changes("u-1").isEmpty)
        #expect(run.customer("u-1", at: end1 + 2 * day).subscriptions.map(\.status) == [.expired, .revoked])
    }

    @Test func aSubscriptionFirstSeenInItsGracePeriodSaysSo() {
        let run = world([
            .notify(
                "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: end1 + hour,
                renewal: S.renewal(at: end1 + hour, grace: end1 + 6 * day, retry: true)),
            .post("u-1", [S.p1], at: end1 + 2 * hour),
        ])
        #expect(lines(run) == ["INITIAL_PURCHASE 1000", "BILLING_ISSUE 1000 in_grace_period"])
    }

    @Test func aNewPeriodOnARefundedChainIsARenewal() {
        let run = world([
            .post("u-1", [S.p1], at: t0),
            .notify("REFUND", at: t0 + 5 * day, transaction: S.revoked(S.p1, at: t0 + 5 * day)),
            .notify(
                "SUBSCRIBED", "RESUBSCRIBE", at: end1 + 5 * day, transaction: F.period("1001", start: end1 + 5 * day)),
        ])
        #expect(lines(run) == ["INITIAL_PURCHASE 1000", "REFUND 1000", "RENEWAL 1001"])
    }

    @Test func aReversalAfterThePeriodEndedSaysItIsOver() {
        let run = world([
            .post("u-1", [S.p1], at: t0),
            .notify("REFUND", at: t0 + 5 * day, transaction: S.revoked(S.p1, at: t0 + 5 * day)),
            .notify("REFUND_REVERSED", at: end1 + day, transaction: S.resigned(S.p1, at: end1 + day)),
        ])
        #expect(lines(run) == ["INITIAL_PURCHASE 1000", "REFUND 1000", "REFUND_REVERSED 1000 expired"])
    }

    @Test func aPeriodThatRanOutBeforeItArrivedAnnouncesNoRenewal() {
        var run = world([.post("u-1", [S.p1], at: t0)])
        run.deliver(.notify("DID_RENEW", at: end2 + day, transaction: S.p2))
        #expect(lines(run) == ["INITIAL_PURCHASE 1000", "EXPIRATION 1000 expired"])
        run.deliver(
            .notify("DID_FAIL_TO_RENEW", at: end2 + 2 * day, renewal: S.renewal(at: end2 + 2 * day, retry: true)))
        #expect(lines(run).last == "BILLING_ISSUE 1001 in_billing_retry")
    }

    /// … and the one that replaces it is the upgrade it is: a PRODUCT_CHANGE, not a new purchase.
    @Test func aChainWhoseOnlyTransactionWasUpgradedLosesAccessUntilTheNewOneArrives() {
        let run = world([
            .post("u-1", [S.p1], at: t0), .post("u-1", [S.upgraded(S.p1, at: t0 + 10 * day)], at: t0 + 10 * day),
            .notify(
                "DID_CHANGE_RENEWAL_PREF", "UPGRADE", at: t0 + 10 * day + hour,
                transaction: F.period("1001", product: F.plus, start: t0 + 10 * day)),
        ])
        #expect(lines(run) == ["INITIAL_PURCHASE 1000", "EXPIRATION 1000 expired", "PRODUCT_CHANGE 1001"])
    }

    @Test func theSameFactAgainEmitsNothing() {
        var run = world(S.subscribed)
        let facts = run.facts("u-1")
        func again(_ delivery: Delivery) -> Delivery {
            var delivery = delivery
            delivery.at = t0 + day
            return delivery
        }
        #expect(run.deliver(again(S.subscribed[1])).isEmpty)
        #expect(
            ChangeDetector.written(
                userId: "u-1", before: facts, after: run.facts("u-1"), events: [], catalog: run.catalog, at: t0 + day)
                == nil)
        #expect(run.deliver(again(S.subscribed[0])).isEmpty)
        #expect(run.types("u-1") == [.initialPurchase])
    }
}

extension Customer {
    func with(version: Int64) -> Customer {
        var copy = self
        copy.version = version
        return copy
    }
}
