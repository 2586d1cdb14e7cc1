import Testing

@testable import Ledger

/// One test per row and rule of docs/domain.md "Subscriptions".
@Suite struct SubscriptionRulesTests {
    let p1 = F.period("1000", start: F.t0)
    let p2 = F.period("1001", start: F.t0 + F.month)

    @Test func activeBeforeExpiresAt() {
        let state = given([.recordTransaction(p1)])
        #expect(state.status(at: F.t0 + F.day)?.status == .active)
    }

    @Test func oneMillisecondFlipsAccessAtExpiresAt() {
        let state = given([.recordTransaction(p1)])
        let expires = p1.expiresDate!
        #expect(state.status(at: expires - 1)?.status == .active)
        #expect(state.status(at: expires)?.status == .expired)
    }

    @Test func inGracePeriodUntilGracePeriodExpiresDateToTheMillisecond() {
        let expires = p1.expiresDate!
        let grace = expires + 6 * F.day
        let state = given([
            .recordTransaction(p1),
            .recordRenewalInfo(F.renewal(signed: expires + 1, grace: grace, retry: true, intent: 2)),
        ])
        #expect(state.status(at: expires)?.status == .inGracePeriod)
        #expect(state.status(at: grace - 1)?.status == .inGracePeriod)
        #expect(state.status(at: grace)?.status == .inBillingRetry)
        #expect(state.status(at: grace - 1)?.status.hasAccess == true)
        #expect(state.status(at: grace)?.status.hasAccess == false)
    }

    @Test func inBillingRetryWithoutGraceHasNoAccess() {
        let state = given([
            .recordTransaction(p1), .recordRenewalInfo(F.renewal(signed: p1.expiresDate!, retry: true, intent: 2)),
        ])
        #expect(state.status(at: p1.expiresDate! + 1)?.status == .inBillingRetry)
    }

    @Test func expiredWhenNothingIsPending() {
        let state = given([
            .recordTransaction(p1), .recordRenewalInfo(F.renewal(signed: F.t0 + F.day, autoRenew: false, intent: 1)),
        ])
        #expect(state.status(at: p1.expiresDate!)?.status == .expired)
    }

    @Test func revokedWhenTheCurrentPeriodIsRefunded() {
        var refunded = p2
        refunded.signedDate = p2.purchaseDate + F.day
        refunded.revocationDate = refunded.signedDate
        let state = given([.recordTransaction(p1), .recordTransaction(p2), .recordTransaction(refunded)])
        #expect(state.status(at: p2.purchaseDate + 2 * F.day)?.status == .revoked)
        #expect(state.status(at: p2.purchaseDate + 2 * F.day)?.revokedAt == refunded.revocationDate)
    }

    @Test func aRefundOfAnOlderPeriodDoesNotEndThePaidCurrentPeriod() {
        var refundedOld = p1
        refundedOld.signedDate = p2.purchaseDate + F.day
        refundedOld.revocationDate = refundedOld.signedDate
        let state = given([.recordTransaction(p1), .recordTransaction(p2), .recordTransaction(refundedOld)])
        #expect(state.status(at: p2.purchaseDate + 2 * F.day)?.status == .active)
    }

    @Test func theCurrentPeriodIsChosenByExpiresDateNotArrival() {
        let later = given([.recordTransaction(p2), .recordTransaction(p1)])
        #expect(later.currentTransaction?.transactionId == "1001")
        #expect(later.status(at: p2.purchaseDate + 1)?.expiresAt == p2.expiresDate)
    }

    @Test func anUpgradeAppliesAtOnceAndTheOldTransactionGrantsNothing() {
        // Yearly bought, upgraded mid-year to a monthly higher tier: the old yearly period
        // would run longer but isUpgraded takes it out.
        let yearly = F.period("1000", product: F.yearly, start: F.t0, length: 365 * F.day)
        let upgradeAt = F.t0 + 40 * F.day
        var upgradedYearly = yearly
        upgradedYearly.signedDate = upgradeAt
        upgradedYearly.isUpgraded = true
        let plus = F.period("1001", product: F.plus, start: upgradeAt)
        let state = given([.recordTransaction(yearly), .recordTransaction(plus), .recordTransaction(upgradedYearly)])
        let judged = state.status(at: upgradeAt + 1)
        #expect(judged?.productId == F.plus)
        #expect(judged?.expiresAt == plus.expiresDate)
        #expect(state.status(at: plus.expiresDate!)?.status == .expired)
    }

    @Test func aDowngradeOnlyChangesAutoRenewProductIdUntilTheNextRenewal() {
        let state = given([
            .recordTransaction(F.period("1000", product: F.yearly, start: F.t0, length: 365 * F.day)),
            .recordRenewalInfo(F.renewal(signed: F.t0 + F.day, autoRenewProductId: F.monthly, product: F.yearly)),
        ])
        let judged = state.status(at: F.t0 + 2 * F.day)
        #expect(judged?.productId == F.yearly)
        #expect(judged?.autoRenewProductId == F.monthly)
        #expect(judged?.status == .active)
    }

    @Test func expiryNeedsNoEventAndNextChangeSaysWhen() {
        let state = given([.recordTransaction(p1)])
        #expect(state.nextChange(after: F.t0) == p1.expiresDate)
        #expect(state.nextChange(after: p1.expiresDate!) == nil)
    }

    @Test func aFamilySharedTransactionGrantsLikeAPurchaseAndEndsWithRevoke() {
        let shared = F.period("1000", start: F.t0, ownership: "FAMILY_SHARED")
        var revoked = shared
        revoked.signedDate = F.t0 + 3 * F.day
        revoked.revocationDate = revoked.signedDate
        revoked.revocationType = "FAMILY_REVOKE"
        #expect(given([.recordTransaction(shared)]).status(at: F.t0 + F.day)?.status == .active)
        #expect(given([.recordTransaction(shared)]).status(at: F.t0 + F.day)?.ownership == "FAMILY_SHARED")
        #expect(
            given([.recordTransaction(shared), .recordTransaction(revoked)]).status(at: F.t0 + 4 * F.day)?.status
                == .revoked)
    }

    @Test func aStaleRenewalInfoFromAnEarlierPeriodDoesNotHideARecovery() {
        // Billing retry during period 1, then a recovery renewal whose renewal info never came.
        let retry = F.renewal(signed: p1.expiresDate! + F.day, retry: true, intent: 2)
        let recovered = F.period("1001", start: p1.expiresDate! + 2 * F.day)
        let state = given([.recordTransaction(p1), .recordRenewalInfo(retry), .recordTransaction(recovered)])
        #expect(state.status(at: recovered.expiresDate! + 1)?.status == .expired)
        #expect(state.status(at: recovered.purchaseDate + 1)?.status == .active)
    }

    @Test func offerAndTrialFlagsComeFromTheCurrentPeriod() {
        let trial = F.period("1000", start: F.t0, length: 7 * F.day, offerType: 1, offerDiscountType: "FREE_TRIAL")
        let judged = given([.recordTransaction(trial)]).status(at: F.t0)
        #expect(judged?.isTrial == true)
        #expect(judged?.isIntroductoryOffer == true)
    }
}
