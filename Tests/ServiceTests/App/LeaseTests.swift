import EventStore
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The leases of background jobs (migration 0032, LeaseTable, LeaseHolder, Lease) on a real
/// PostgreSQL, as the service role, and the keeper's timing rules on their own.
@Suite(.tags(.database)) struct LeaseTests {
    let conninfo: String
    let admin: Connection

    init() throws {
        conninfo = try TestDatabase.shared.freshDatabase()
        admin = try Connection(conninfo)
    }

    func holder(_ name: String) -> LeaseHolder { LeaseHolder(name: name, conninfo: conninfo, logger: .silent) }

    func row(_ lease: String) throws -> LeaseTable.Row? {
        LeaseTable.decode(try admin.query(LeaseTable.all)).first { $0.name == lease }
    }

    /// What time does to a holder that stopped renewing: its lease runs out (on the database's clock).
    func expire(_ lease: String) throws {
        try admin.execute("UPDATE ops.leases SET expires_at = now() - interval '1 second' WHERE name = $1", [lease])
    }

    @Test func ofTwoHoldersOnlyOneGetsTheLease() throws {
        let a = holder("node-a").lease("job")
        let b = holder("node-b").lease("job")
        #expect(a.keep(force: true))
        #expect(!b.keep(force: true))
        #expect(a.isHeld && !b.isHeld)
        let stored = try #require(try row("job"))
        #expect(stored.holder == "node-a" && stored.claim == a.holder.claim && stored.live)
        #expect(stored.token == a.token)
        #expect(b.token == nil && b.fence == nil)
    }

    @Test func ofEightHoldersAskingAtOnceExactlyOneGetsIt() throws {
        let leases = (0..<8).map { holder("node-\($0)").lease("race") }
        let winners = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: leases.count) { index in
            if leases[index].keep(force: true) { winners.add(1, ordering: .relaxed) }
        }
        #expect(winners.load(ordering: .relaxed) == 1)
        #expect(leases.filter(\.isHeld).count == 1)

        // Once it ran out, again exactly one takes it, with a bigger token.
        let first = try #require(try row("race"))
        try expire("race")
        let others = leases.filter { !$0.isHeld }
        let again = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: others.count) { index in
            if others[index].keep(force: true) { again.add(1, ordering: .relaxed) }
        }
        #expect(again.load(ordering: .relaxed) == 1)
        #expect(try row("race").map { $0.token > first.token && $0.claim != first.claim } == true)
    }

    @Test func renewalKeepsTheLeaseAndItsToken() throws {
        let a = holder("node-a").lease("job")
        let b = holder("node-b").lease("job")
        #expect(a.keep(force: true))
        // Three seconds pass (on the table's clock): half the TTL is used up.
        try admin.execute(
            """
            UPDATE ops.leases SET expires_at = expires_at - interval '3 seconds',
                renewed_at = renewed_at - interval '3 seconds' WHERE name = 'job'
            """)
        let before = try #require(try row("job"))
        #expect(a.keep(force: true))
        let after = try #require(try row("job"))
        #expect(after.token == before.token)
        #expect(after.acquiredAt == before.acquiredAt)
        #expect(after.expiresAt > before.expiresAt && after.renewedAt > before.renewedAt)
        #expect(!b.keep(force: true), "a renewed lease is not free")
    }

    @Test func afterExpiryTheOtherTakesItWithABiggerTokenAndTheOldHolderLearnsItLostIt() throws {
        let a = holder("node-a").lease("job")
        let b = holder("node-b").lease("job")
        #expect(a.keep(force: true))
        let old = try #require(a.token)
        let oldFence = try #require(a.fence)
        try expire("job")

        #expect(b.keep(force: true))
        let new = try #require(b.token)
        #expect(new > old)
        #expect(try row("job")?.holder == "node-b")
        #expect(!a.keep(force: true), "the old holder's renewal finds the lease taken")
        #expect(!a.isHeld && a.token == nil)

        // A write transaction fenced with the old token fails; one with the new token passes.
        #expect(try fencedWrite(oldFence) == LeaseTable.fencedOutState)
        #expect(try fencedWrite(try #require(b.fence)) == nil)
    }

    @Test func theSameHolderTakingItBackAfterExpiryKeepsItsToken() throws {
        let a = holder("node-a").lease("job")
        #expect(a.keep(force: true))
        let token = a.token
        try expire("job")
        #expect(a.keep(force: true), "nobody else took it meanwhile")
        #expect(a.token == token, "no change of holder, no new token")
    }

    @Test func aGracefulReleaseHandsOverAtOnce() throws {
        let a = holder("node-a").lease("job")
        let b = holder("node-b").lease("job")
        #expect(a.keep(force: true))
        let old = try #require(a.token)
        #expect(!b.keep(force: true))
        a.release()
        #expect(try row("job") == nil, "the row is gone")
        #expect(!a.isHeld)
        #expect(b.keep(force: true), "taken at the next ask, without waiting for an expiry")
        #expect(try #require(b.token) > old, "a new holder, a new token, even though the row was deleted")
    }

    @Test func twoProcessesGivenTheSameInstanceNameDoNotBothHoldIt() throws {
        let a = holder("node-a").lease("job")
        let twin = holder("node-a").lease("job")
        #expect(a.keep(force: true))
        #expect(!twin.keep(force: true))
    }

    @Test func aDueAskIsSpacedButAForcedOneIsNot() throws {
        let a = holder("node-a").lease("job")
        let b = holder("node-b").lease("job")
        #expect(a.keep(force: true))
        #expect(!b.keep(force: true))
        a.release()
        // b asked a moment ago: its next ask is a retry interval away, unless forced.
        #expect(!b.keep(), "not due yet: no statement sent")
        #expect(b.keep(force: true))
    }

    @Test func aFencedTransactionLongerThanTheTTLKeepsTheLeaseAndRenewsItAfter() throws {
        // A replay's swap can run longer than the TTL (100k corrections into the feed): the fence
        // holds the row all along, so its holder must neither give the lease up nor lose it.
        let timing = LeaseKeeper.Timing(ttl: 1.5, renewEvery: 0.5, retryEvery: 0.25, margin: 0.2)
        let a = holder("node-a").lease("job", timing: timing, standsAside: false)
        let b = holder("node-b").lease("job", timing: timing)
        #expect(a.keep(force: true))
        let token = try #require(a.token)
        let fence = try #require(a.fence)
        let connection = try Connection(conninfo)
        try connection.executeScript("SET ROLE iap_ledger_service")
        try a.renewing { () throws in
            try connection.transaction { connection in
                _ = try connection.query(fence)
                a.fencePassed()
                // Time passing is what this is about: wait until the table's own clock says the
                // TTL ran out (the process's deadline, counted from before the ask, passed first).
                try eventually("the lease's TTL ran out on the database's clock", within: 30) {
                    try row("job")?.live == false
                }
                #expect(a.isHeld, "past the TTL, still held: the fence locks the row")
                #expect(!b.keep(force: true), "the other instance cannot take it meanwhile")
                try connection.execute("UPDATE ops.leases SET renewed_at = renewed_at WHERE name = $1", ["job"])
            }
            a.fenceEnded()
        }
        #expect(a.isHeld && a.token == token, "renewed with the same token once the fence ended")
        let stored = try #require(try row("job"))
        #expect(stored.claim == a.holder.claim && stored.live)
        a.release()
        #expect(try row("job") == nil, "released, not left to expire")
    }

    /// A transaction of the service role that starts with `fence` and writes; nil when it
    /// committed, else the SQLSTATE it failed with.
    func fencedWrite(_ fence: Query) throws -> String? {
        let connection = try Connection(conninfo)
        try connection.executeScript("SET ROLE iap_ledger_service")
        do {
            try connection.transaction { connection in
                _ = try connection.query(fence)
                try connection.execute(
                    "UPDATE ops.leases SET renewed_at = renewed_at WHERE name = $1", ["job"])
            }
            return nil
        } catch let error as DatabaseError {
            return error.sqlState
        }
    }
}

/// LeaseKeeper's rules, with times passed in (seconds).
@Suite struct LeaseKeeperTests {
    let grant = LeaseTable.Granted(token: 7, acquiredAt: 0, expiresAt: 0)

    @Test func aFreshKeeperAsksAtOnceAndHoldsNothing() {
        let keeper = LeaseKeeper()
        #expect(keeper.isDue(at: 0))
        #expect(!keeper.isHeld(at: 0))
    }

    @Test func aGrantHoldsUntilTheTTLLessTheMarginCountedFromTheAsk() {
        var keeper = LeaseKeeper()
        #expect(keeper.answered(grant, sentAt: 100) == .acquired(token: 7))
        #expect(keeper.isHeld(at: 105.4))
        #expect(!keeper.isHeld(at: 105.5), "sent at 100, TTL 6 s, margin 0.5 s")
        #expect(!keeper.isDue(at: 101.9))
        #expect(keeper.isDue(at: 102), "renewed every 2 s")
        #expect(keeper.answered(grant, sentAt: 102) == .renewed)
        #expect(keeper.isHeld(at: 107.4))
    }

    @Test func noGrantWhileHeldIsALossAndTheNextAskIsARetryAway() {
        var keeper = LeaseKeeper()
        _ = keeper.answered(grant, sentAt: 0)
        #expect(keeper.answered(nil, sentAt: 2) == .lost)
        #expect(!keeper.isHeld(at: 2) && keeper.token == nil)
        #expect(!keeper.isDue(at: 2.9) && keeper.isDue(at: 3))
        #expect(keeper.answered(nil, sentAt: 3) == .none, "still someone else's: nothing new")
    }

    @Test func aFailedAskKeepsTheLeaseUntilItsDeadlineThenLosesIt() {
        var keeper = LeaseKeeper()
        _ = keeper.answered(grant, sentAt: 0)
        #expect(keeper.failed(at: 2) == .none)
        #expect(keeper.isHeld(at: 5) && keeper.isDue(at: 3))
        #expect(keeper.failed(at: 5.5) == .lost)
        #expect(!keeper.isHeld(at: 5.5))
    }

    @Test func aNewTokenAfterALapseIsAnAcquisition() {
        var keeper = LeaseKeeper()
        _ = keeper.answered(grant, sentAt: 0)
        #expect(keeper.expire(at: 6) == .lost)
        #expect(
            keeper.answered(LeaseTable.Granted(token: 9, acquiredAt: 0, expiresAt: 0), sentAt: 7) == .acquired(token: 9)
        )
    }

    @Test func aFencedLeaseIsHeldPastItsDeadlineAndNotAskedForUntilTheFenceEnds() {
        var keeper = LeaseKeeper()
        _ = keeper.answered(grant, sentAt: 0)
        keeper.fenceTaken()
        #expect(keeper.isHeld(at: 20) && !keeper.isDue(at: 20))
        #expect(keeper.expire(at: 20) == .none && keeper.failed(at: 20) == .none)
        #expect(keeper.isHeld(at: 20) && keeper.token == 7)
        keeper.fenceEnded(at: 20)
        #expect(!keeper.isHeld(at: 20) && keeper.isDue(at: 20), "past the deadline: ask at once")
        #expect(keeper.answered(grant, sentAt: 20) == .renewed, "the same token continues the lease")
        #expect(keeper.isHeld(at: 25.4))
    }

    @Test func aFenceEndingPastTheDeadlineLosesTheLeaseIfAnotherTookIt() {
        var keeper = LeaseKeeper()
        _ = keeper.answered(grant, sentAt: 0)
        keeper.fenceTaken()
        keeper.fenceEnded(at: 10)
        #expect(keeper.answered(nil, sentAt: 10) == .lost)
        #expect(
            keeper.answered(LeaseTable.Granted(token: 9, acquiredAt: 0, expiresAt: 0), sentAt: 11)
                == .acquired(token: 9))
    }

    @Test func aFenceEndingBeforeTheDeadlineChangesNothing() {
        var keeper = LeaseKeeper()
        _ = keeper.answered(grant, sentAt: 0)
        keeper.fenceTaken()
        keeper.fenceEnded(at: 1)
        #expect(keeper.isHeld(at: 5.4) && !keeper.isHeld(at: 5.5))
        #expect(!keeper.isDue(at: 1.9) && keeper.isDue(at: 2))
    }

    @Test func aReleasedLeaseIsAskedForAgainAtOnce() {
        var keeper = LeaseKeeper()
        _ = keeper.answered(grant, sentAt: 0)
        keeper.released(at: 1)
        #expect(!keeper.isHeld(at: 1) && keeper.isDue(at: 1))
    }

    @Test func aDeadHoldersLeaseIsTakenWithinTenSeconds() {
        // Worst case: the holder dies just after renewing; the lease runs for the TTL, then the
        // next instance asks within a retry interval, plus the slowest job poll (1 s, JobRunner).
        let timing = LeaseKeeper.Timing.standard
        #expect(timing.ttl + timing.retryEvery + 1 < 10)
        #expect(timing.renewEvery * 2 < timing.ttl - timing.margin, "two missed renewals still leave it held")
    }
}
