import EventStore
import Ledger
import Testing

@testable import Infrastructure
@testable import Ingest
@testable import Service

/// The group commit's planner alone: no database, no threads. Each test feeds it what the
/// reads and the one append would answer and checks the actions and each member's end.
@Suite struct BatchPlannerTests {
    typealias Fixtures = IngestPlannerTests

    func member(_ batch: FactBatch, claimant: String?) -> IngestPlanner {
        IngestPlanner(batch: batch, claimant: claimant, policy: .transfer, now: Fixtures.t0 + 1)
    }

    func purchase(_ otid: String, by user: String) -> IngestPlanner {
        member(Fixtures.posted(Fixtures.purchase(otid)), claimant: user)
    }

    @Test func disjointPurchasesShareOneLockStatementOneAppendAndOneCommit() throws {
        var plan = BatchPlanner([purchase("2000", by: "bob"), purchase("1000", by: "alice")])
        guard case .lockAndRead(let locks, let ownersOf, let streams) = plan.start(catalogVersion: 4) else {
            Issue.record("a batch starts by locking and reading")
            return
        }
        #expect(locks == ["chain:1000", "chain:2000", "user:alice", "user:bob"])
        #expect(ownersOf == ["1000", "2000"])
        #expect(streams == locks)
        #expect(plan.admitted == 2)

        guard case .append(let members, let alsoRead) = plan.read(owners: [:], streams: [:], announced: [:]) else {
            Issue.record("new purchases append")
            return
        }
        #expect(members.map(\.index) == [0, 1])
        #expect(members[0].append.expected == ["chain:2000": 0, "user:bob": 0])
        #expect(members[1].append.expected == ["chain:1000": 0, "user:alice": 0])
        #expect(alsoRead.isEmpty)

        // One es.append answered for both, seqs interleaved as the function assigns them.
        let recorded =
            Fixtures.recorded(members[0].append, firstSeq: 100)
            + Fixtures.recorded(members[1].append, firstSeq: 102)
        guard case .commit(let writes) = plan.appended(recorded, otherChains: [:]) else {
            Issue.record("an append is followed by every member's projection writes")
            return
        }
        #expect(writes.map(\.member) == [0, 1])
        #expect(writes.map { $0.writes.users.map(\.userId) } == [["bob"], ["alice"]])
        #expect(writes[0].writes.users[0].lastSeq == 101)
        #expect(writes[1].writes.users[0].lastSeq == 103)
        #expect(writes.map(\.writes.catalogVersion) == [4, 4])

        guard case .finish = plan.committed(documents: ["alice": Array("a".utf8), "bob": Array("b".utf8)]) else {
            Issue.record("a commit finishes the batch")
            return
        }
        guard case .finished(let bob) = plan.ends[0], case .finished(let alice) = plan.ends[1] else {
            Issue.record("both members finish: \(plan.ends)")
            return
        }
        #expect(bob.customer == Array("b".utf8))
        #expect(alice.customer == Array("a".utf8))
        #expect(bob.transactions.map(\.fact.originalTransactionId) == ["2000"])
        #expect(alice.transactions.map(\.recorded) == [true])
    }

    @Test func aMemberWhoseLocksOverlapAnEarlierOnesRecordsAlone() {
        // Same user, and the same chain by another user: neither may share the first's transaction.
        var plan = BatchPlanner([
            purchase("1000", by: "alice"), purchase("2000", by: "alice"), purchase("1000", by: "bob"),
            purchase("3000", by: "carol"),
        ])
        guard case .lockAndRead(let locks, _, _) = plan.start(catalogVersion: 1) else {
            Issue.record("a batch starts by locking and reading")
            return
        }
        #expect(locks == ["chain:1000", "chain:3000", "user:alice", "user:carol"])
        #expect(plan.admitted == 2)
        #expect(plan.ends.map(Self.name) == ["open", "alone", "alone", "open"])
    }

    @Test func onlyTheFirstMemberWithAnIdempotencyKeyIsAdmitted() {
        var plan = BatchPlanner([
            member(Fixtures.pushed("n-1", Fixtures.purchase("1000")), claimant: nil),
            member(Fixtures.pushed("n-2", Fixtures.purchase("2000")), claimant: nil),
            purchase("3000", by: "carol"),
        ])
        _ = plan.start(catalogVersion: 1)
        #expect(plan.ends.map(Self.name) == ["open", "alone", "open"])
    }

    @Test func aDuplicateNotificationLeavesAndTheOthersAppendAgain() {
        var plan = BatchPlanner([
            purchase("3000", by: "carol"), member(Fixtures.pushed("n-1", Fixtures.purchase("1000")), claimant: nil),
        ])
        _ = plan.start(catalogVersion: 1)
        guard case .append(let members, _) = plan.read(owners: [:], streams: [:], announced: [:]) else {
            Issue.record("both append")
            return
        }
        #expect(members.map(\.index) == [0, 1])
        #expect(members[1].append.idempotencyKey == .appleNotification("n-1"))
        guard case .append(let again, _) = plan.appended(nil, otherChains: [:]) else {
            Issue.record("without the redelivery the rest appends again")
            return
        }
        #expect(again.map(\.index) == [0])
        #expect(again[0].append.idempotencyKey == nil)
        #expect(plan.ends.map(Self.name) == ["open", "alone"])
        guard case .commit(let writes) = plan.appended(Fixtures.recorded(again[0].append), otherChains: [:]) else {
            Issue.record("the purchase commits")
            return
        }
        #expect(writes.map(\.member) == [0])
    }

    @Test func aMemberNeedingAnotherLockAfterTheBatchsLeavesAndTheRestGoesOn() {
        // bob takes over zed's chain: zed's lock would come after the batch's, so bob leaves.
        var plan = BatchPlanner([purchase("1000", by: "bob"), purchase("2000", by: "carol")])
        _ = plan.start(catalogVersion: 1)
        let chain = Fixtures.stream(.transactionRecorded(Fixtures.purchase("1000")))
        guard
            case .append(let members, _) = plan.read(
                owners: ["1000": "zed"], streams: ["chain:1000": chain], announced: [:])
        else {
            Issue.record("carol's purchase appends")
            return
        }
        #expect(members.map(\.index) == [1])
        #expect(plan.ends.map(Self.name) == ["alone", "open"])
        #expect(plan.admitted == 1)
    }

    @Test func aRepeatedPurchaseAppendsNothingAndStillCommitsWithTheOthers() {
        // alice already has chain 1000 and this very transaction: nothing to append for her,
        // her document is rendered again in the batch's commit.
        var plan = BatchPlanner([purchase("1000", by: "alice"), purchase("2000", by: "bob")])
        _ = plan.start(catalogVersion: 1)
        let chain = Fixtures.stream(.transactionRecorded(Fixtures.purchase("1000")))
        let account = Fixtures.stream(Fixtures.claimed("alice", "1000"))
        guard
            case .append(let members, _) = plan.read(
                owners: ["1000": "alice"], streams: ["chain:1000": chain, "user:alice": account], announced: [:])
        else {
            Issue.record("bob's purchase appends")
            return
        }
        #expect(members.map(\.index) == [1])
        guard case .commit(let writes) = plan.appended(Fixtures.recorded(members[0].append), otherChains: [:]) else {
            Issue.record("both commit")
            return
        }
        #expect(writes.map(\.member) == [0, 1])
        _ = plan.committed(documents: [:])
        guard case .finished(let alice) = plan.ends[0] else {
            Issue.record("alice finishes")
            return
        }
        #expect(alice.transactions.map(\.recorded) == [false])
    }

    // MARK: A lone request (solo): the planner's every action passes through

    /// The second lock round a batch of several sends away (bob takes over zed's chain: zed's
    /// lock comes after the first round's) is the lone request's own next step.
    @Test func aLoneRequestTakesASecondLockRoundAndFinishes() {
        var plan = BatchPlanner([purchase("1000", by: "bob")])
        #expect(plan.solo)
        guard case .lockAndRead(let locks, _, _) = plan.start(catalogVersion: 2) else {
            Issue.record("a lone request starts by locking and reading")
            return
        }
        #expect(locks == ["chain:1000", "user:bob"])
        let chain = Fixtures.stream(.transactionRecorded(Fixtures.purchase("1000")))
        guard
            case .lockAndRead(let more, _, _) = plan.read(
                owners: ["1000": "zed"], streams: ["chain:1000": chain], announced: [:])
        else {
            Issue.record("zed is locked in a second round, not sent away")
            return
        }
        #expect(more == ["user:zed"])
        #expect(plan.ends.map(Self.name) == ["open"])
        guard
            case .append(let members, _) = plan.read(
                owners: [:], streams: ["user:zed": Fixtures.stream(Fixtures.claimed("zed", "1000"))], announced: [:])
        else {
            Issue.record("the transfer appends")
            return
        }
        #expect(members.map(\.index) == [0])
        guard case .commit(let writes) = plan.appended(Fixtures.recorded(members[0].append), otherChains: [:]) else {
            Issue.record("the append is followed by the projection writes")
            return
        }
        #expect(writes.map { $0.writes.users.map(\.userId) } == [["bob", "zed"]])
        guard case .finish = plan.committed(documents: ["bob": Array("b".utf8)]) else {
            Issue.record("a commit finishes")
            return
        }
        guard case .finished(let outcome) = plan.ends[0] else {
            Issue.record("the request finishes: \(plan.ends)")
            return
        }
        #expect(outcome.transferredFrom == ["1000": "zed"])
    }

    /// An owner sorting before the claimant restarts the transaction with both locked up front;
    /// the restarted attempt starts from the same planner.
    @Test func aLoneRequestRestartsWithAWiderLockSet() {
        var plan = BatchPlanner([purchase("1000", by: "zoe")])
        _ = plan.start(catalogVersion: 1)
        guard case .restart = plan.read(owners: ["1000": "alice"], streams: [:], announced: [:]) else {
            Issue.record("alice cannot be locked after zoe: the transaction restarts")
            return
        }
        guard case .lockAndRead(let locks, _, _) = plan.start(catalogVersion: 1) else {
            Issue.record("the next attempt locks and reads")
            return
        }
        #expect(locks == ["chain:1000", "user:alice", "user:zoe"])
    }

    /// A refusal ends the lone request before anything is written: the transaction finishes
    /// empty and the request's end says why.
    @Test func aLoneRequestRefusedUnderTheKeepPolicyEndsRejected() {
        var plan = BatchPlanner([
            IngestPlanner(
                batch: Fixtures.posted(Fixtures.purchase("1000")), claimant: "bob", policy: .keep, now: Fixtures.t0)
        ])
        _ = plan.start(catalogVersion: 1)
        _ = plan.read(owners: ["1000": "zed"], streams: [:], announced: [:])
        guard
            case .finish = plan.read(
                owners: [:], streams: ["user:zed": Fixtures.stream(Fixtures.claimed("zed", "1000"))], announced: [:])
        else {
            Issue.record("the refusal finishes the transaction")
            return
        }
        guard case .rejected(let rejection) = plan.ends[0] else {
            Issue.record("the request ends rejected: \(plan.ends)")
            return
        }
        #expect(rejection == .ownedByOtherUser(owner: "zed"))
    }

    static func name(_ end: BatchPlanner.End?) -> String {
        switch end {
        case nil: "open"
        case .alone: "alone"
        case .rejected: "rejected"
        case .finished: "finished"
        case .gaveUp: "gave up"
        }
    }
}
