import Testing

@testable import Ledger

@Suite struct ChainTests {
    let first = F.period("1000", start: F.t0)

    @Test func aNewTransactionIsRecorded() {
        #expect(given([]).when(.recordTransaction(first)) == [.transactionRecorded(first)])
    }

    @Test func theSameTransactionAgainDecidesNothing() {
        #expect(given([.recordTransaction(first)]).when(.recordTransaction(first)) == [])
    }

    @Test func aTransactionResignedWithNewContentIsNew() {
        var refunded = first
        refunded.signedDate += F.day
        refunded.revocationDate = refunded.signedDate
        #expect(
            given([.recordTransaction(first)]).when(.recordTransaction(refunded)) == [.transactionRecorded(refunded)])
    }

    @Test func anOlderVersionArrivingLateIsKeptButDoesNotWin() {
        var refunded = first
        refunded.signedDate += F.day
        refunded.revocationDate = refunded.signedDate
        let state = given([.recordTransaction(refunded), .recordTransaction(first)])
        #expect(state.transactionVersions["1000"]?.count == 2)
        #expect(state.latest(transactionId: "1000") == refunded)
        #expect(state.when(.recordTransaction(first)) == [])
    }

    @Test func theSameRenewalInfoAgainDecidesNothing() {
        let info = F.renewal(signed: F.t0)
        #expect(given([]).when(.recordRenewalInfo(info)) == [.renewalInfoRecorded(info)])
        #expect(given([.recordRenewalInfo(info)]).when(.recordRenewalInfo(info)) == [])
    }

    @Test func aRedeliveredNotificationDecidesNothing() {
        let note = F.note("DID_RENEW", signed: F.t0, uuid: "n-1")
        #expect(given([]).when(.recordNotification(note)) == [.notificationReceived(note)])
        var resent = note
        resent.signedDate += 1  // Apple re-signs retries; the UUID is the key
        #expect(given([.recordNotification(note)]).when(.recordNotification(resent)) == [])
    }

    @Test func theNewestRenewalInfoWinsWhateverTheArrivalOrder() {
        let old = F.renewal(signed: F.t0, autoRenew: true)
        let new = F.renewal(signed: F.t0 + 1, autoRenew: false)
        #expect(given([.recordRenewalInfo(old), .recordRenewalInfo(new)]).latestRenewalInfo == new)
        #expect(given([.recordRenewalInfo(new), .recordRenewalInfo(old)]).latestRenewalInfo == new)
    }

    @Test func evolveByValueEqualsEvolveInPlace() {
        let events: [LedgerEvent] = [.transactionRecorded(first), .renewalInfoRecorded(F.renewal(signed: F.t0))]
        #expect(events.reduce(ChainState.initial, Chain.evolve) == Chain.fold(events))
    }

    @Test func eventsNameTheirStreams() {
        #expect(LedgerEvent.transactionRecorded(first).stream == "chain:1000")
        #expect(LedgerEvent.notificationReceived(F.note("TEST", signed: 0, otid: nil)).stream == "apple:notifications")
        #expect(
            LedgerEvent.chainReleased(userId: "u-2", originalTransactionId: "1", to: "u-1", at: 0).stream == "user:u-2")
    }
}
