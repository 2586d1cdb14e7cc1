import Testing

@testable import Ledger

/// docs/domain.md "Facts in, events out": a fact's identity is its content other than `signedDate`.
/// StoreKit and the Server API re-sign what they hand out; those copies must not grow the log.
@Suite struct ResignedCopyTests {
    let p1 = F.period("1000", start: F.t0)

    @Test func aCopyOfTheVersionInForceResignedLaterIsADuplicate() {
        var copy = p1
        copy.signedDate = F.t0 + 5 * F.day
        #expect(given([.recordTransaction(p1)]).when(.recordTransactionCopy(copy)).isEmpty)
    }

    @Test func aCopyWithNewContentIsRecorded() {
        var refunded = p1
        refunded.signedDate = F.t0 + 5 * F.day
        refunded.revocationDate = refunded.signedDate
        #expect(
            given([.recordTransaction(p1)]).when(.recordTransactionCopy(refunded)) == [.transactionRecorded(refunded)])
    }

    @Test func aReversalCopyAfterTheRefundIsRecordedAndWins() {
        var refunded = p1
        refunded.signedDate = F.t0 + 5 * F.day
        refunded.revocationDate = refunded.signedDate
        var reversed = p1
        reversed.signedDate = F.t0 + 6 * F.day
        let state = given([.recordTransaction(p1), .recordTransaction(refunded)])
        #expect(state.when(.recordTransactionCopy(reversed)) == [.transactionRecorded(reversed)])
        #expect(
            given([.recordTransaction(p1), .recordTransaction(refunded), .recordTransactionCopy(reversed)])
                .status(at: F.t0 + 7 * F.day)?.status == .active)
    }

    @Test func anOlderCopyOfASupersededVersionIsADuplicate() {
        var refunded = p1
        refunded.signedDate = F.t0 + 5 * F.day
        refunded.revocationDate = refunded.signedDate
        var olderCopy = p1
        olderCopy.signedDate = F.t0 + F.day
        #expect(
            given([.recordTransaction(p1), .recordTransaction(refunded)]).when(.recordTransactionCopy(olderCopy))
                .isEmpty)
    }

    @Test func aPushedFactKeepsEverySignedVersion() {
        // A notification's payload (a reversal can arrive ahead of its refund: only its newer
        // signedDate lets it win then).
        var resigned = p1
        resigned.signedDate = F.t0 + 5 * F.day
        #expect(given([.recordTransaction(p1)]).when(.recordTransaction(resigned)) == [.transactionRecorded(resigned)])
    }

    @Test func renewalInfoCopiesFollowTheSameRule() {
        let info = F.renewal(signed: F.t0)
        var resigned = info
        resigned.signedDate = F.t0 + F.day
        var turnedOff = F.renewal(signed: F.t0 + 2 * F.day, autoRenew: false, intent: 1)
        #expect(given([.recordRenewalInfo(info)]).when(.recordRenewalInfoCopy(resigned)).isEmpty)
        #expect(
            given([.recordRenewalInfo(info)]).when(.recordRenewalInfoCopy(turnedOff)) == [
                .renewalInfoRecorded(turnedOff)
            ])
        turnedOff.signedDate = F.t0 + 3 * F.day
        #expect(
            given([.recordRenewalInfo(info)]).when(.recordRenewalInfo(resigned)) == [.renewalInfoRecorded(resigned)])
    }

    @Test func aLogHoldingRepeatsFoldsToTheSameState() {
        // Logs written before copies were deduplicated hold such repeats; replay folds them away.
        var copy = p1
        copy.signedDate = F.t0 + 5 * F.day
        let withRepeats = given([.recordTransaction(p1), .recordTransaction(copy)])
        let without = given([.recordTransaction(p1)])
        for now in [F.t0, F.t0 + F.day, p1.expiresDate!] {
            #expect(withRepeats.status(at: now) == without.status(at: now))
        }
    }

    @Test func aSubscriptionWithoutRenewalInfoIsTakenToRenew() {
        let judged = given([.recordTransaction(p1)]).status(at: F.t0 + F.day)
        #expect(judged?.autoRenew == true)
        #expect(judged?.autoRenewProductId == p1.productId)
        #expect(judged?.willRenew == true)
        let off = given([
            .recordTransaction(p1), .recordRenewalInfo(F.renewal(signed: F.t0 + F.hour, autoRenew: false)),
        ])
        #expect(off.status(at: F.t0 + F.day)?.autoRenew == false)
    }
}
