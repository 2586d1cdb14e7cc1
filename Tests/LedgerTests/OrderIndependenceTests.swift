import TestSupport
import Testing

@testable import Ledger

/// The same events, in any arrival order and with redeliveries, give the same answer.
@Suite struct OrderIndependenceTests {
    static let seeds: [UInt64] = Array(1...200)

    @Test(arguments: seeds)
    func shuffledFactsWithRedeliveriesGiveTheSameCustomer(seed: UInt64) {
        let history = History.generate(seed: seed)
        let baseline = History.play(history.inOrder)
        var rng = SplitMix64(seed: seed &* 7919)
        for _ in 0..<10 {
            let world = History.play(history.arranged(using: &rng))
            #expect(world.log.count == baseline.log.count, "redeliveries recorded twice (seed \(seed))")
            for now in history.instants {
                let expected = baseline.customer(at: now)
                let actual = world.customer(at: now)
                #expect(actual == expected, "seed \(seed) at \(now)")
                #expect(
                    String(decoding: actual.jsonBytes(), as: UTF8.self)
                        == String(decoding: expected.jsonBytes(), as: UTF8.self))
                #expect(
                    CustomerView.nextChange(account: world.accounts["u-1"]!, chains: world.chains, after: now)
                        == CustomerView.nextChange(
                            account: baseline.accounts["u-1"]!, chains: baseline.chains, after: now))
            }
        }
    }

    @Test func generatedHistoriesReachEveryStatusAndDebt() {
        var seen = Set<SubscriptionStatus>()
        var debt = false
        var trials = false
        for seed in Self.seeds {
            let history = History.generate(seed: seed)
            let world = History.play(history.inOrder)
            for now in history.instants {
                let doc = world.customer(at: now)
                seen.formUnion(doc.subscriptions.map(\.status))
                debt = debt || (doc.balances["coins"] ?? 0) < 0
                trials = trials || doc.subscriptions.contains(where: \.isTrial)
            }
        }
        #expect(seen == Set(SubscriptionStatus.allCases))
        #expect(debt)
        #expect(trials)
    }

    @Test func everyPermutationOfASmallHistoryGivesTheSameCustomer() {
        let p1 = F.period("1000", start: F.t0)
        var upgraded = p1
        upgraded.signedDate = F.t0 + 10 * F.day
        upgraded.isUpgraded = true
        let plus = F.period("1001", product: F.plus, start: F.t0 + 10 * F.day)
        var refunded = plus
        refunded.signedDate = F.t0 + 12 * F.day
        refunded.revocationDate = refunded.signedDate
        var reversed = plus
        reversed.signedDate = F.t0 + 13 * F.day
        let facts: [ChainCommand] = [
            .recordTransaction(p1), .recordTransaction(upgraded), .recordTransaction(plus),
            .recordTransaction(refunded), .recordTransaction(reversed),
            .recordRenewalInfo(F.renewal(signed: F.t0 + 10 * F.day, autoRenewProductId: F.plus, product: F.plus)),
            .recordRenewalInfo(F.renewal(signed: F.t0 + 12 * F.day, autoRenew: false, product: F.plus)),
        ]
        let claim = History.Step.user(.chainClaimed(userId: "u-1", originalTransactionId: "1000", from: nil, at: F.t0))
        let instants = [F.t0 + F.day, F.t0 + 11 * F.day, F.t0 + 14 * F.day, F.t0 + 45 * F.day]
        let baseline = History.play([claim] + facts.map(History.Step.fact))
        let expected = instants.map { baseline.customer(at: $0) }
        #expect(expected[2].entitlements["plus"]?.active == true)
        #expect(expected[2].entitlements["plus"]?.willRenew == false)
        var count = 0
        var mismatches = 0
        permutations(facts) { order in
            count += 1
            let world = History.play([claim] + order.map(History.Step.fact))
            if instants.map({ world.customer(at: $0) }) != expected { mismatches += 1 }
        }
        #expect(count == 5040)
        #expect(mismatches == 0)
    }

    /// Heap's algorithm.
    func permutations<T>(_ items: [T], _ body: ([T]) -> Void) {
        var a = items
        var c = Array(repeating: 0, count: a.count)
        body(a)
        var i = 0
        while i < a.count {
            if c[i] < i {
                a.swapAt(i % 2 == 0 ? 0 : c[i], i)
                body(a)
                c[i] += 1
                i = 0
            } else {
                c[i] = 0
                i += 1
            }
        }
    }
}
