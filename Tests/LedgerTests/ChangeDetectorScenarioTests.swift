import JSON
import TestSupport
import Testing

@testable import Ledger

/// docs/domain.md, scenario by scenario: the facts in the order they happened, written and
/// judged the way the Service does, give the change types a user of the feed must see; the
/// same facts shuffled and delivered twice give no duplicate change and end at the same document.
@Suite struct ChangeDetectorScenarioTests {
    @Test(arguments: Scenarios.all)
    func inOrderGivesTheExpectedChanges(scenario: Scenario) {
        let run = ChangeRun.inOrder(scenario)
        for user in scenario.users {
            #expect(run.types(user) == scenario.expected[user] ?? [], "\(scenario.name): \(user)")
        }
        #expect(run.noisyDuplicates.isEmpty, "\(scenario.name): a write that decided nothing emitted changes")
        ChangeInvariants.check(run, scenario, "\(scenario.name) in order")
    }

    static let seeds: [UInt64] = Array(1...100)

    @Test(arguments: Scenarios.all)
    func shuffledAndTwiceGivesNoDuplicateAndTheSameDocument(scenario: Scenario) {
        let original = ChangeRun.inOrder(scenario)
        for seed in Self.seeds {
            let context = "\(scenario.name) seed \(seed)"
            let (run, repeats) = ChangeRun.arranged(scenario, seed: seed, original: original)
            for repeated in repeats {
                #expect(repeated.events.isEmpty, "\(context): \(repeated.label) delivered twice was recorded twice")
                #expect(repeated.written == 0, "\(context): \(repeated.label) delivered twice emitted a change")
            }
            for user in scenario.users {
                #expect(
                    run.customer(user, at: scenario.end) == original.customer(user, at: scenario.end),
                    "\(context): \(user) ends at another document")
            }
            ChangeInvariants.check(run, scenario, context)
        }
    }

    /// Random histories (every status, upgrades, extensions, refunds, debts, family sharing),
    /// in time order and rearranged: the same invariants.
    @Test(arguments: Array(UInt64(1)...100))
    func generatedHistoriesKeepTheInvariants(seed: UInt64) {
        let scenario = Scenario.generated(seed: seed)
        let original = ChangeRun.inOrder(scenario)
        #expect(original.noisyDuplicates.isEmpty)
        ChangeInvariants.check(original, scenario, "\(scenario.name) in order")
        for arrangement in UInt64(1)...3 {
            let context = "\(scenario.name) arrangement \(arrangement)"
            let (run, repeats) = ChangeRun.arranged(scenario, seed: seed &* 31 &+ arrangement, original: original)
            for repeated in repeats {
                #expect(repeated.events.isEmpty && repeated.written == 0, "\(context): \(repeated.label) twice")
            }
            #expect(run.customer("u-1", at: scenario.end) == original.customer("u-1", at: scenario.end), "\(context)")
            ChangeInvariants.check(run, scenario, context)
        }
    }
}

/// What must hold of any run, whatever the arrival order.
enum ChangeInvariants {
    static let purchases: Set<ChangeType> = [
        .initialPurchase, .renewal, .productChange, .nonRenewingPurchase, .nonConsumablePurchase, .consumablePurchase,
    ]

    static func check(_ run: ChangeRun, _ scenario: Scenario, _ context: String) {
        for user in scenario.users {
            let steps = run.steps[user] ?? []
            // Steps in time order; every change carries its step's instant; time alone makes
            // only the time-driven types; entitlements sorted.
            #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.step.at <= $1.step.at }, "\(context): \(user) order")
            for (step, elapsed) in steps {
                #expect(!step.changes.isEmpty, "\(context): empty step")
                for change in step.changes {
                    #expect(change.occurredAt == step.at, "\(context): occurredAt")
                    #expect(change.entitlementIds == change.entitlementIds.sorted(), "\(context): entitlementIds order")
                    if elapsed {
                        #expect(ChangeType.timeDriven.contains(change.type), "\(context): time made \(change.type)")
                    }
                }
            }
            // A purchase or renewal is announced once.
            var announced: [String: Int] = [:]
            for change in run.changes(user) where purchases.contains(change.type) {
                let key =
                    "\(change.type.rawValue) \(change.transactionId ?? "-") \(change.details["currency"]?.stringValue ?? "")"
                announced[key, default: 0] += 1
            }
            for (key, count) in announced where count > 1 {
                Issue.record("\(context): \(user) saw \(key) \(count) times")
            }
            impliedStateMatches(run, scenario, user: user, context)
        }
    }

    /// Folding only the changes a user saw gives what their final document says: access per
    /// subscription (a stacked non-renewing product counts as one), ownership per
    /// non-consumable, each balance, each admin grant.
    static func impliedStateMatches(_ run: ChangeRun, _ scenario: Scenario, user: String, _ context: String) {
        let catalog = scenario.catalog
        var access: [String: Bool] = [:]
        var owned: [String: Bool] = [:]
        var balances: [String: Int64] = [:]
        var grants: [String: Bool] = [:]

        func kind(_ change: ChangeDraft) -> ProductType? {
            guard let productId = change.productId else { return nil }
            return catalog.products[productId]?.type
        }
        func key(_ productId: String?, _ otid: String?) -> String {
            if let productId, catalog.products[productId]?.duration != nil { return "stack:" + productId }
            return otid ?? "-"
        }
        func statusAccess(_ change: ChangeDraft) -> Bool? {
            change.details["status"]?.stringValue.flatMap(SubscriptionStatus.init(rawValue:))?.hasAccess
        }

        func fold(_ step: ChangeStep) {
            for change in step.changes {
                let k = key(change.productId, change.originalTransactionId)
                if let currency = change.details["currency"]?.stringValue, let balance = change.details["balance"] {
                    balances[currency] = balance.int64Value
                }
                switch (change.type, kind(change)) {
                case (.initialPurchase, _), (.renewal, _), (.productChange, _), (.billingRecovered, _),
                    (.nonRenewingPurchase, _):
                    access[k] = true
                case (.billingIssue, _):
                    access[k] = statusAccess(change) ?? true
                case (.expiration, _):
                    if change.originalTransactionId == nil {
                        for name in change.entitlementIds { grants[name] = false }
                    } else {
                        access[k] = false
                    }
                case (.nonConsumablePurchase, _): owned[change.transactionId!] = true
                case (.refund, .nonConsumable?): owned[change.transactionId!] = false
                case (.refundReversed, .nonConsumable?): owned[change.transactionId!] = true
                case (.refund, .consumable?), (.refundReversed, .consumable?): break
                case (.refund, _): access[k] = false
                case (.refundReversed, _): access[k] = statusAccess(change) ?? true
                case (.transfer, let type):
                    let otid = change.originalTransactionId!
                    let toMe = change.details["to"]?.stringValue == user
                    if type == .nonConsumable {
                        owned[change.transactionId!] =
                            toMe
                            ? step.customer.nonConsumables.contains {
                                $0.transactionId == change.transactionId && $0.revokedAt == nil
                            } : nil
                    } else if type != .consumable {
                        access[k] =
                            toMe
                            ? step.customer.subscriptions.contains {
                                $0.originalTransactionId == otid && $0.status.hasAccess
                            }
                            : nil
                    }
                case (.promotionalGrant, _) where change.details["currency"] == nil:
                    let expiresAt = change.details["expiresAt"]?.stringValue
                    for name in change.entitlementIds {
                        grants[name] = expiresAt.map { RFC3339.parse($0)! > step.at } ?? true
                    }
                case (.promotionalRevoke, _):
                    for name in change.entitlementIds { grants[name] = false }
                default:
                    break
                }
            }
        }

        func compare(_ doc: Customer, at moment: String) {
            var docAccess: [String: Bool] = [:]
            for sub in doc.subscriptions {
                let k = key(sub.productId, sub.originalTransactionId)
                docAccess[k] = (docAccess[k] ?? false) || sub.status.hasAccess
            }
            for k in Set(docAccess.keys).union(access.keys) {
                #expect(
                    access[k] ?? false == docAccess[k] ?? false, "\(context): \(user) \(k) access per changes \(moment)"
                )
            }
            for item in doc.nonConsumables {
                #expect(
                    owned[item.transactionId] ?? false == (item.revokedAt == nil),
                    "\(context): \(user) owns \(item.transactionId) \(moment)")
            }
            if scenario.checksBalances {
                for (currency, balance) in doc.balances {
                    #expect(balances[currency] ?? 0 == balance, "\(context): \(user) \(currency) per changes \(moment)")
                }
            }
        }
        let steps = run.steps[user] ?? []
        var folded = 0
        for (index, checkpoint) in (run.checkpoints[user] ?? []).enumerated() {
            for (step, _) in steps[folded..<checkpoint.steps] { fold(step) }
            folded = checkpoint.steps
            compare(checkpoint.customer, at: "after write \(index)")
        }

        // A grant that lapses while a purchase still gives its entitlement ends nothing: the
        // purchase's own end says so. Only grants of entitlements no purchase gives are checked.
        let end = scenario.end
        let final = run.customer(user, at: end)
        let purchased = Set(
            final.subscriptions.flatMap { catalog.product(for: $0.productId, transactionType: "").entitlements }
                + final.nonConsumables.flatMap { catalog.product(for: $0.productId, transactionType: "").entitlements })
        for (name, grant) in run.ledger.account(of: user).grants where !purchased.contains(name) {
            #expect(grants[name] ?? false == grant.isActive(at: end), "\(context): \(user) grant \(name)")
        }
    }
}
