import JSON
import Testing

@testable import Ledger

/// api.md §8, monthly subscriptions with a 12-month commitment (App Store Server API 1.21), as
/// Apple's "Managing the life cycle of monthly subscriptions with a 12-month commitment" guide
/// describes them: access follows each period's own expiresDate, cancelling ends only the
/// commitment's renewal, no grace period, a refund of a prior period revokes that period only.
@Suite struct CommitmentPlanTests {
    /// Period `n` (1…12) of a commitment that started at F.t0, one month each.
    static func period(_ n: Int64, start: Int64 = F.t0, revoked: Int64? = nil) -> Transaction {
        var t = F.period(
            n == 1 ? "1000" : String(1000 + n), start: start + (n - 1) * F.month, revoked: revoked,
            revocationType: revoked == nil ? nil : "REFUND_FULL")
        t.billingPlanType = "MONTHLY"
        t.commitment = Commitment(
            billingPeriodNumber: n, totalBillingPeriods: 12, commitmentExpiresDate: start + 12 * F.month,
            commitmentPrice: 119_880)
        return t
    }

    /// Renewal info as Apple signs it: `autoRenewStatus` stays 1 while the commitment's periods
    /// are billed, `commitmentAutoRenewStatus` says whether the commitment renews.
    static func renewal(signed: Int64, commitmentRenews: Bool, autoRenew: Bool = true) -> RenewalInfo {
        var r = F.renewal(signed: signed, autoRenew: autoRenew)
        r.renewalBillingPlanType = "MONTHLY"
        r.commitmentRenewal = CommitmentRenewal(
            commitmentAutoRenewStatus: commitmentRenews ? 1 : 0, commitmentAutoRenewProductId: F.monthly,
            commitmentRenewalBillingPlanType: "MONTHLY", commitmentRenewalDate: F.t0 + 12 * F.month,
            commitmentRenewalPrice: 119_880)
        return r
    }

    /// Cancelled in period 2; Apple goes on billing (DID_RENEW) up to period `through`, and with
    /// the last period's renewal info turns the monthly renewal off too.
    static func cancelledMidCommitment(through last: Int64) -> [ChainCommand] {
        var facts: [ChainCommand] = [.recordTransaction(period(1)), .recordTransaction(period(2))]
        facts.append(.recordRenewalInfo(renewal(signed: F.t0 + F.month + 5 * F.day, commitmentRenews: false)))
        if last >= 3 { for n in Int64(3)...last { facts.append(.recordTransaction(period(n))) } }
        if last == 12 {
            facts.append(
                .recordRenewalInfo(
                    renewal(signed: F.t0 + 11 * F.month + F.day, commitmentRenews: false, autoRenew: false)))
        }
        return facts
    }

    @Test(arguments: [false, true])
    func aCancelledCommitmentStaysActiveThroughItsLastPeriodThenExpires(shuffled: Bool) {
        var generator = SystemRandomNumberGenerator()
        func facts(through last: Int64) -> [ChainCommand] {
            let facts = Self.cancelledMidCommitment(through: last)
            return shuffled ? facts.shuffled(using: &generator) : facts
        }
        let end = F.t0 + 12 * F.month
        // Mid-commitment (period 7 billed): still active and renewing month by month.
        let judged = given(facts(through: 7)).status(at: F.t0 + 6 * F.month + F.day)
        #expect(judged?.autoRenew == true)
        #expect(judged?.status == .active)
        #expect(judged?.commitment?.period == 7)
        #expect(judged?.commitment?.periods == 12)
        #expect(judged?.commitment?.willRenew == false)
        #expect(judged?.commitment?.expiresAt == end)
        #expect(judged?.commitment?.price == 119_880)
        // After the twelfth period: Apple's EXPIRED; access ended with its expiresDate.
        let state = given(facts(through: 12))
        #expect(state.status(at: end - 1)?.status == .active)
        #expect(state.status(at: end)?.status == .expired)
        #expect(state.status(at: end)?.autoRenew == false)
    }

    @Test func cancellingOnlyTheCommitmentKeepsTheMonthlyRenewalOn() {
        let state = given([
            .recordTransaction(Self.period(1)),
            .recordRenewalInfo(Self.renewal(signed: F.t0 + 5 * F.day, commitmentRenews: false)),
        ])
        let judged = state.status(at: F.t0 + 10 * F.day)
        #expect(judged?.status == .active)
        #expect(judged?.autoRenew == true)
        #expect(judged?.commitment?.willRenew == false)
    }

    /// Apple: "Billing Grace Period doesn't apply to monthly subscriptions with 12-month commitments."
    @Test func aFailedMonthlyRenewalHasNoGracePeriod() {
        let expires = Self.period(3).expiresDate!
        var failed = Self.renewal(signed: expires + 1, commitmentRenews: true)
        failed.isInBillingRetryPeriod = true
        failed.gracePeriodExpiresDate = expires + 6 * F.day
        let state = given([
            .recordTransaction(Self.period(1)), .recordTransaction(Self.period(2)), .recordTransaction(Self.period(3)),
            .recordRenewalInfo(failed),
        ])
        #expect(state.status(at: expires + F.day)?.status == .inBillingRetry)
        #expect(state.status(at: expires + F.day)?.gracePeriodExpiresAt == nil)
        // The same failure on an ordinary monthly plan is a grace period.
        let standardExpires = F.t0 + F.month
        var ordinary = F.renewal(signed: standardExpires + 1, grace: standardExpires + 6 * F.day, retry: true)
        ordinary.renewalBillingPlanType = nil
        let standard = given([.recordTransaction(F.period("1000", start: F.t0)), .recordRenewalInfo(ordinary)])
        #expect(standard.status(at: standardExpires + F.day)?.status == .inGracePeriod)
    }

    @Test(arguments: [false, true])
    func aRefundOfAPriorPeriodRevokesThatPeriodOnlyAndOfTheCurrentOneEndsAccess(shuffled: Bool) {
        var generator = SystemRandomNumberGenerator()
        let refundedPrior: [ChainCommand] = [
            .recordTransaction(Self.period(1)), .recordTransaction(Self.period(2)), .recordTransaction(Self.period(3)),
            .recordTransaction(Self.period(1, revoked: F.t0 + 2 * F.month + F.day)),
        ]
        let prior = given(shuffled ? refundedPrior.shuffled(using: &generator) : refundedPrior)
        #expect(prior.status(at: F.t0 + 2 * F.month + 2 * F.day)?.status == .active)
        #expect(prior.status(at: F.t0 + 2 * F.month + 2 * F.day)?.commitment?.period == 3)

        let refundedCurrent: [ChainCommand] = [
            .recordTransaction(Self.period(1)), .recordTransaction(Self.period(2)), .recordTransaction(Self.period(3)),
            .recordTransaction(Self.period(3, revoked: F.t0 + 2 * F.month + F.day)),
        ]
        let current = given(shuffled ? refundedCurrent.shuffled(using: &generator) : refundedCurrent)
        #expect(current.status(at: F.t0 + 2 * F.month + 2 * F.day)?.status == .revoked)
    }

    @Test func otherPlansHaveNoCommitmentAndTheDocumentSaysNull() throws {
        let standard = given([.recordTransaction(F.period("1000", start: F.t0))])
        #expect(standard.status(at: F.t0 + F.day)?.commitment == nil)
        let view = SubscriptionView(originalTransactionId: "1000", judged: standard.status(at: F.t0 + F.day)!)
        var w = JSONWriter()
        view.write(to: &w)
        #expect(String(decoding: w.bytes, as: UTF8.self).contains(#""commitment":null"#))
        let plan = given([.recordTransaction(Self.period(1))])
        let planView = SubscriptionView(originalTransactionId: "1000", judged: plan.status(at: F.t0 + F.day)!)
        var p = JSONWriter()
        planView.write(to: &p)
        #expect(
            String(decoding: p.bytes, as: UTF8.self).contains(
                #""commitment":{"period":1,"periods":12,"expiresAt":"2026-12-27T00:00:00.000Z","willRenew":true,"price":119880}"#
            ))
    }
}
