import Testing

@testable import Ledger

/// The one fold: each event lands in the chain or account its stream names, and a user's
/// document version follows every stream that can change the document.
@Suite struct LedgerWorldTests {
    @Test func eventsOfOtherStreamsAreIgnored() {
        var world = LedgerWorld()
        let test = F.note("TEST", signed: F.t0, otid: nil)
        #expect(LedgerEvent.notificationReceived(test).stream == LedgerStream.unattachedNotifications)
        #expect(world.apply(.notificationReceived(test), seq: 1) == .unrouted)
        #expect(world.chains.isEmpty && world.accounts.isEmpty)
        #expect(world.chainPositions.isEmpty && world.accountPositions.isEmpty)
        // Streams that hold no ledger events route nowhere either.
        #expect(LedgerRoute(stream: "catalog") == .unrouted)
        #expect(LedgerRoute(stream: LedgerStream.unattachedNotifications) == .unrouted)
    }

    @Test func eachEventGoesToTheStreamItIsAppendedTo() {
        let events: [LedgerEvent] = [
            .transactionRecorded(F.period("1000", start: F.t0)),
            .renewalInfoRecorded(F.renewal(otid: "2000", signed: F.t0)),
            .notificationReceived(F.note("DID_RENEW", signed: F.t0, otid: "3000")),
            .chainClaimed(userId: "u-1", originalTransactionId: "1000", from: nil, at: F.t0),
            .balanceDebited(
                userId: "u-2", currency: "coins", amount: 1, idempotencyKey: "k", reason: "r", balanceAfter: 0,
                at: F.t0),
        ]
        var world = LedgerWorld()
        for (index, event) in events.enumerated() {
            #expect(LedgerRoute(stream: event.stream) == event.route)
            world.apply(event, seq: Int64(index + 1))
        }
        #expect(Set(world.chains.keys) == ["1000", "2000", "3000"])
        #expect(Set(world.accounts.keys) == ["u-1", "u-2"])
        #expect(world.chains["2000"]?.renewalInfos.count == 1)
        #expect(world.account(of: "u-1").chains == ["1000"])
        #expect(world.account(of: "u-2").debited["coins"] == 1)
        #expect(world.account(of: "nobody") == .initial)
    }

    @Test func aUsersDocumentVersionIsTheHighestSequenceOfTheirStreams() {
        var world = LedgerWorld()
        world.apply(.chainClaimed(userId: "u-1", originalTransactionId: "1000", from: nil, at: F.t0), seq: 3)
        #expect(world.version(of: "u-1") == 3)
        world.apply(.transactionRecorded(F.period("1000", start: F.t0)), seq: 7)
        // A chain the user does not own leaves the version alone.
        world.apply(.transactionRecorded(F.period("2000", otid: "2000", start: F.t0)), seq: 9)
        #expect(world.version(of: "u-1") == 7)
        world.apply(.renewalInfoRecorded(F.renewal(signed: F.t0)), seq: 12)
        #expect(world.version(of: "u-1") == 12)
        #expect(world.accountPositions["u-1"] == LedgerWorld.StreamPosition(version: 1, lastSeq: 3))
        #expect(world.chainPositions["1000"] == LedgerWorld.StreamPosition(version: 2, lastSeq: 12))
        // Once released, the chain no longer counts; the release itself is on the user's stream.
        world.apply(.chainReleased(userId: "u-1", originalTransactionId: "1000", to: "u-2", at: F.t0), seq: 13)
        world.apply(.transactionRecorded(F.period("1001", start: F.t0 + F.month)), seq: 20)
        #expect(world.version(of: "u-1") == 13)
        #expect(world.version(of: "nobody") == 0)
    }
}
