import TestSupport

@testable import Ledger

/// A generated history: Apple facts (any order is legal) and the user's own stream (claims,
/// debits, admin grants), whose relative order is fixed because each was decided in turn.
struct History {
    var facts: [ChainCommand] = []
    var userEvents: [LedgerEvent] = []
    var instants: [Int64] = []

    enum Step {
        case fact(ChainCommand)
        case user(LedgerEvent)
    }

    /// Applies the steps to a fresh world.
    static func play(_ steps: [Step]) -> World {
        var world = World()
        for step in steps {
            switch step {
            case .fact(let fact): world.record(fact)
            case .user(let event): world.apply([event])
            }
        }
        return world
    }

    /// The history as generated: facts in causal order, user events after.
    var inOrder: [Step] { facts.map(Step.fact) + userEvents.map(Step.user) }

    /// Facts shuffled, some redelivered at random places, user events interleaved at random
    /// but in their own order.
    func arranged(using rng: inout SplitMix64) -> [Step] {
        var shuffled = facts.shuffled(using: &rng)
        let redeliveries = Int.random(in: 0...max(1, facts.count / 2), using: &rng)
        for _ in 0..<redeliveries {
            let again = facts.randomElement(using: &rng)!
            shuffled.insert(again, at: Int.random(in: 0...shuffled.count, using: &rng))
        }
        var steps = shuffled.map(Step.fact)
        var floor = 0
        for event in userEvents {
            let at = Int.random(in: floor...steps.count, using: &rng)
            steps.insert(.user(event), at: at)
            floor = at + 1
        }
        return steps
    }

    static func generate(seed: UInt64) -> History {
        var rng = SplitMix64(seed: seed)
        var h = History()
        func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }
        func ms(_ range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &rng) }
        var last = F.t0

        for c in 0..<Int.random(in: 1...3, using: &rng) {
            let otid = String(1000 + c * 100)
            h.userEvents.append(.chainClaimed(userId: "u-1", originalTransactionId: otid, from: nil, at: F.t0))
            var start = F.t0 + ms(0...10) * F.day
            var product = chance(50) ? F.monthly : F.yearly
            let periods = Int.random(in: 1...5, using: &rng)
            for p in 0..<periods {
                let tid = p == 0 ? otid : "\(otid)-\(p)"
                let length = product == F.yearly ? 365 * F.day : F.month
                let period = F.period(
                    tid, otid: otid, product: product, start: start, length: length,
                    ownership: chance(20) ? "FAMILY_SHARED" : "PURCHASED",
                    offerType: p == 0 && chance(30) ? 1 : nil,
                    offerDiscountType: p == 0 && chance(30) ? "FREE_TRIAL" : nil)
                h.facts.append(.recordTransaction(period))
                h.facts.append(
                    .recordNotification(
                        F.note(
                            p == 0 ? "SUBSCRIBED" : "DID_RENEW", signed: start,
                            otid: otid, tid: tid, uuid: "n-\(tid)")))
                let expires = period.expiresDate!
                h.facts.append(
                    .recordRenewalInfo(
                        F.renewal(
                            otid: otid, signed: chance(50) ? start + ms(0...F.day) : expires + ms(0...F.day),
                            autoRenew: chance(70), autoRenewProductId: chance(80) ? product : F.monthly,
                            product: product,
                            grace: chance(30) ? expires + ms(1...16) * F.day : nil, retry: chance(30) ? true : nil,
                            intent: chance(30) ? ms(1...5) : nil)))
                var next = expires + (chance(20) ? ms(1...20) * F.day : 0)
                switch Int.random(in: 0..<6, using: &rng) {
                case 0:  // refund, maybe reversed
                    var refunded = period
                    refunded.signedDate = start + ms(1...(length - 1))
                    refunded.revocationDate = refunded.signedDate
                    refunded.revocationReason = ms(0...1)
                    refunded.revocationType = chance(20) ? "FAMILY_REVOKE" : "REFUND_FULL"
                    h.facts.append(.recordTransaction(refunded))
                    if chance(50) {
                        var reversed = period
                        reversed.signedDate = refunded.signedDate + ms(1...F.day)
                        h.facts.append(.recordTransaction(reversed))
                    }
                case 1:  // renewal date extension
                    var extended = period
                    extended.signedDate = start + ms(1...(length - 1))
                    extended.expiresDate = expires + ms(1...10) * F.day
                    h.facts.append(.recordTransaction(extended))
                    next = max(next, extended.expiresDate!)
                case 2 where p < periods - 1:  // upgrade: next period starts now, on the higher tier
                    let at = start + ms(1...(length - 1))
                    var upgraded = period
                    upgraded.signedDate = at
                    upgraded.isUpgraded = true
                    h.facts.append(.recordTransaction(upgraded))
                    next = at
                    product = F.plus
                default:
                    break
                }
                start = next
                last = max(last, next + 20 * F.day)
            }
        }
        for k in 0..<Int.random(in: 0...3, using: &rng) {
            let tid = "5\(k)00"
            h.userEvents.append(.chainClaimed(userId: "u-1", originalTransactionId: tid, from: nil, at: F.t0))
            let bought = F.consumable(tid, quantity: ms(1...3), at: F.t0 + ms(0...30) * F.day)
            h.facts.append(.recordTransaction(bought))
            h.facts.append(
                .recordNotification(F.note("ONE_TIME_CHARGE", signed: bought.signedDate, otid: tid, uuid: "n-\(tid)")))
            if chance(40) {
                var refunded = bought
                refunded.signedDate += ms(1...10) * F.day
                refunded.revocationDate = refunded.signedDate
                // Full, half and a third, by the purchase's index (no draw: earlier seeds keep their histories).
                refunded.revocationPercentage = [nil, 50_000, 33_333][k]
                h.facts.append(.recordTransaction(refunded))
            }
        }
        for k in 0..<Int.random(in: 0...2, using: &rng) {
            let tid = "6\(k)00"
            h.userEvents.append(.chainClaimed(userId: "u-1", originalTransactionId: tid, from: nil, at: F.t0))
            let bought = F.nonConsumable(tid, product: k == 0 ? F.removeAds : F.lifetime, at: F.t0 + ms(0...30) * F.day)
            h.facts.append(.recordTransaction(bought))
            if chance(50) {
                var refunded = bought
                refunded.signedDate += ms(1...10) * F.day
                refunded.revocationDate = refunded.signedDate
                h.facts.append(.recordTransaction(refunded))
                if chance(50) {
                    var reversed = bought
                    reversed.signedDate = refunded.signedDate + ms(1...F.day)
                    h.facts.append(.recordTransaction(reversed))
                }
            }
        }
        for d in 0..<Int.random(in: 0...4, using: &rng) {
            h.userEvents.append(
                .balanceDebited(
                    userId: "u-1", currency: "coins", amount: ms(1...60),
                    idempotencyKey: "d\(d)", reason: "spend", balanceAfter: 0,
                    at: F.t0 + Int64(d)))
        }
        if chance(30) {
            h.userEvents.append(
                .entitlementGranted(
                    userId: "u-1", entitlement: "plus", reason: "support",
                    expiresAt: F.t0 + ms(1...90) * F.day, at: F.t0))
        }
        h.instants = [F.t0 - 1] + (0..<12).map { _ in ms(F.t0...last) }
        return h
    }
}
