import EventStore
import Ledger
import Testing

@testable import Infrastructure
@testable import Ingest
@testable import Service

/// The ingest planner alone: no database, no clock. Each test feeds it what the reads would
/// find and checks the actions it returns.
@Suite struct IngestPlannerTests {
    typealias Loaded = LedgerRepository.LoadedStream
    static let t0: Int64 = 1_767_225_600_000

    func planner(_ batch: FactBatch, claimant: String?, policy: TransferPolicy = .transfer) -> IngestPlanner {
        IngestPlanner(batch: batch, claimant: claimant, policy: policy, now: Self.t0 + 1)
    }

    @Test func locksChainsThenUsersInSortedOrderAndReadsWhatItLocks() {
        var purchase = planner(Self.posted(Self.purchase("2000"), Self.purchase("1000")), claimant: "bob")
        guard case .lockAndRead(let locks, let ownersOf, let streams) = purchase.start(catalogVersion: 1) else {
            Issue.record("a purchase starts by locking and reading")
            return
        }
        #expect(locks == ["chain:1000", "chain:2000", "user:bob"])
        #expect(ownersOf == ["1000", "2000"])
        #expect(streams == locks)

        var aboutNoChain = planner(
            FactBatch(notification: (Self.notification("n-1", about: nil), "payload")), claimant: nil)
        guard case .lockAndRead(let noChainLocks, let noOwners, _) = aboutNoChain.start(catalogVersion: 1) else {
            Issue.record("a notification starts by locking and reading")
            return
        }
        #expect(noChainLocks == [LedgerStream.unattachedNotifications])
        #expect(noOwners.isEmpty)
    }

    @Test func aPurchaseIsThreeActionsThenFinishes() throws {
        var plan = planner(Self.posted(Self.purchase("1000")), claimant: "alice")
        _ = plan.start(catalogVersion: 3)
        guard case .append(let append, let alsoRead) = plan.read(owners: [:], streams: [:]) else {
            Issue.record("a new purchase appends")
            return
        }
        #expect(
            append.events.map(\.event) == [.transactionRecorded(Self.purchase("1000")), Self.claimed("alice", "1000")])
        #expect(append.events.map(\.payload) == ["jws", nil])
        #expect(append.expected == ["chain:1000": 0, "user:alice": 0])
        #expect(append.idempotencyKey == nil)
        #expect(alsoRead.isEmpty)

        guard case .commit(let writes) = plan.appended(.recorded(Self.recorded(append)), otherChains: [:]) else {
            Issue.record("an append is followed by the projection writes")
            return
        }
        #expect(writes.catalogVersion == 3)
        #expect(writes.chainOwners == [.init(originalTransactionId: "1000", userId: "alice")])
        #expect(writes.users.map(\.userId) == ["alice"])
        #expect(writes.users[0].account.chains == ["1000"])
        #expect(writes.users[0].lastSeq == 101)

        guard case .finish(let outcome) = plan.committed(documents: ["alice": Array("{}".utf8)]) else {
            Issue.record("a commit finishes")
            return
        }
        #expect(outcome.transactions.map(\.recorded) == [true])
        #expect(outcome.customer == Array("{}".utf8))
        #expect(outcome.transferredFrom.isEmpty)
    }

    @Test func aTransferReRendersBothUsersAndSaysFromWhom() {
        var plan = planner(Self.posted(Self.purchase("1000")), claimant: "bob")
        _ = plan.start(catalogVersion: 1)
        let chain = Self.stream(.transactionRecorded(Self.purchase("1000")), lastSeq: 5)
        // zed sorts after bob: locked next, in order.
        guard
            case .lockAndRead(let locks, let ownersOf, _) = plan.read(
                owners: ["1000": "zed"], streams: ["chain:1000": chain])
        else {
            Issue.record("an owner sorting after the claimant is locked next")
            return
        }
        #expect(locks == ["user:zed"])
        #expect(ownersOf.isEmpty)
        guard
            case .append(let append, _) = plan.read(
                owners: [:], streams: ["user:zed": Self.stream(Self.claimed("zed", "1000"), lastSeq: 6)])
        else {
            Issue.record("a transfer appends")
            return
        }
        #expect(
            append.events.map(\.event) == [
                .chainClaimed(userId: "bob", originalTransactionId: "1000", from: "zed", at: Self.t0 + 1),
                .chainReleased(userId: "zed", originalTransactionId: "1000", to: "bob", at: Self.t0 + 1),
            ])
        #expect(append.expected == ["chain:1000": 1, "user:bob": 0, "user:zed": 1])
        guard case .commit(let writes) = plan.appended(.recorded(Self.recorded(append)), otherChains: [:]) else {
            Issue.record("a transfer writes the projections")
            return
        }
        #expect(writes.users.map(\.userId) == ["bob", "zed"])
        #expect(writes.users.map(\.account.chains) == [["1000"], []])
        #expect(writes.chainOwners == [.init(originalTransactionId: "1000", userId: "bob")])
        guard case .finish(let outcome) = plan.committed(documents: [:]) else {
            Issue.record("a commit finishes")
            return
        }
        #expect(outcome.transferredFrom == ["1000": "zed"])
        #expect(outcome.transactions.map(\.recorded) == [false])
    }

    /// What the change feed compares: each re-rendered user's facts before the batch (the
    /// transfer's previous owner still had the chain, the claimant not yet) and when their
    /// stored documents were rendered, as read under each user's lock.
    @Test func theCommitCarriesWhatEachUserHadBeforeAndWhenItWasAnnounced() {
        var plan = planner(Self.posted(Self.purchase("1000")), claimant: "bob")
        _ = plan.start(catalogVersion: 1)
        let chain = Self.stream(.transactionRecorded(Self.purchase("1000")), lastSeq: 5)
        _ = plan.read(owners: ["1000": "zed"], streams: ["chain:1000": chain], announced: ["bob": Self.t0 - 7])
        guard
            case .append(let append, _) = plan.read(
                owners: [:], streams: ["user:zed": Self.stream(Self.claimed("zed", "1000"), lastSeq: 6)],
                announced: ["zed": Self.t0 - 5])
        else {
            Issue.record("a transfer appends")
            return
        }
        guard case .commit(let writes) = plan.appended(.recorded(Self.recorded(append)), otherChains: [:]) else {
            Issue.record("a transfer writes the projections")
            return
        }
        #expect(writes.changeInputs.map(\.userId) == ["bob", "zed"])
        #expect(writes.changeInputs.map(\.before.account.chains) == [[], ["1000"]])
        #expect(writes.changeInputs[1].before.chains["1000"]?.transactionVersions.keys.sorted() == ["1000"])
        #expect(writes.changeInputs.map(\.before.version) == [0, 6])
        #expect(writes.changeInputs.map(\.announcedAt) == [Self.t0 - 7, Self.t0 - 5])
        #expect(writes.events == append.events.map(\.event))
    }

    @Test func theKeepPolicyRejectsAClaimOfAnotherUsersChain() {
        var plan = planner(Self.posted(Self.purchase("1000")), claimant: "bob", policy: .keep)
        _ = plan.start(catalogVersion: 1)
        _ = plan.read(owners: ["1000": "zed"], streams: [:])
        guard
            case .reject(let rejection) = plan.read(
                owners: [:], streams: ["user:zed": Self.stream(Self.claimed("zed", "1000"))])
        else {
            Issue.record("keep rejects")
            return
        }
        #expect(rejection == .ownedByOtherUser(owner: "zed"))
    }

    @Test func anOwnerSortingBeforeALockedUserRestartsWithAWiderLockSet() {
        var plan = planner(Self.posted(Self.purchase("1000")), claimant: "zoe")
        _ = plan.start(catalogVersion: 1)
        guard case .restart(let lockUpFront) = plan.read(owners: ["1000": "alice"], streams: [:]) else {
            Issue.record("alice cannot be locked after zoe")
            return
        }
        #expect(lockUpFront == ["alice", "zoe"])
        guard case .lockAndRead(let locks, _, _) = plan.start(catalogVersion: 1) else {
            Issue.record("the next attempt locks and reads")
            return
        }
        #expect(locks == ["chain:1000", "user:alice", "user:zoe"])
        let next = plan.read(
            owners: ["1000": "alice"], streams: ["user:alice": Self.stream(Self.claimed("alice", "1000"))])
        guard case .append(let append, _) = next else {
            Issue.record("with every user locked, the transfer is decided")
            return
        }
        #expect(append.expected["user:alice"] == 1)
    }

    @Test func restartsAreBoundedThenItGivesUp() {
        var plan = planner(Self.posted(Self.purchase("1000")), claimant: "zoe")
        for round in 0...IngestPlanner.restartLimit {
            _ = plan.start(catalogVersion: 1)
            let action = plan.read(owners: ["1000": "user\(round)"], streams: [:])
            if round < IngestPlanner.restartLimit {
                guard case .restart = action else {
                    Issue.record("round \(round) restarts")
                    return
                }
            } else {
                guard case .giveUp(let reason) = action else {
                    Issue.record("past the limit it gives up")
                    return
                }
                #expect(reason.contains("user\(round)"))
            }
        }
    }

    @Test func aPostedDuplicateAppendsNothingAndReRendersTheClaimant() {
        let fact = Self.purchase("1000")
        var plan = planner(Self.posted(Self.purchase("1000", signed: Self.t0 + 50)), claimant: "alice")
        _ = plan.start(catalogVersion: 1)
        // A re-signed copy of the version in force is the same fact: no event, no append.
        let next = plan.read(
            owners: ["1000": "alice"],
            streams: [
                "chain:1000": Self.stream(.transactionRecorded(fact), lastSeq: 7),
                "user:alice": Self.stream(Self.claimed("alice", "1000"), lastSeq: 8),
            ])
        guard case .commit(let writes) = next else {
            Issue.record("a duplicate goes straight to the projection writes")
            return
        }
        #expect(writes.chainOwners.isEmpty)
        #expect(writes.users.map(\.userId) == ["alice"])
        #expect(writes.users[0].lastSeq == 8)
        guard case .finish(let outcome) = plan.committed(documents: ["alice": [1]]) else {
            Issue.record("a commit finishes")
            return
        }
        #expect(outcome.transactions.map(\.recorded) == [false])
        #expect(outcome.customer == [1])
    }

    @Test func thePushedReSignedVersionIsANewFactWhereAPostedCopyIsNot() {
        let inForce = Self.stream(.transactionRecorded(Self.purchase("1000")))
        let resigned = Self.purchase("1000", signed: Self.t0 + 50)
        var plan = planner(Self.pushed("n-1", resigned), claimant: nil)
        _ = plan.start(catalogVersion: 1)
        guard case .append(let append, _) = plan.read(owners: [:], streams: ["chain:1000": inForce]) else {
            Issue.record("a pushed version appends")
            return
        }
        #expect(append.events.map(\.event).contains(.transactionRecorded(resigned)))

        var copy = planner(Self.posted(resigned), claimant: "alice")
        _ = copy.start(catalogVersion: 1)
        let owned = ["chain:1000": inForce, "user:alice": Self.stream(Self.claimed("alice", "1000"))]
        guard case .commit = copy.read(owners: ["1000": "alice"], streams: owned) else {
            Issue.record("a posted copy of the version in force appends nothing")
            return
        }
    }

    @Test func anAttemptRedoneUnderANewerCatalogRendersUnderIt() {
        var plan = planner(Self.posted(Self.purchase("1000")), claimant: "alice")
        _ = plan.start(catalogVersion: 1)
        _ = plan.read(owners: [:], streams: [:])
        // The commit's catalog check failed (IC001): the shell reloads the catalog and redoes.
        _ = plan.start(catalogVersion: 2)
        guard case .append(let append, _) = plan.read(owners: [:], streams: [:]),
            case .commit(let writes) = plan.appended(.recorded(Self.recorded(append)), otherChains: [:])
        else {
            Issue.record("the redone attempt appends and writes")
            return
        }
        #expect(writes.catalogVersion == 2)
    }

    @Test func theOwnersOtherChainsAreReadWithTheAppend() {
        var plan = planner(Self.posted(Self.purchase("1000")), claimant: "alice")
        _ = plan.start(catalogVersion: 1)
        let alice = Self.stream(Self.claimed("alice", "0999"), lastSeq: 3)
        guard case .append(let append, let alsoRead) = plan.read(owners: [:], streams: ["user:alice": alice]) else {
            Issue.record("a new purchase appends")
            return
        }
        #expect(alsoRead == ["chain:0999"])
        let other = ["chain:0999": Self.stream(.transactionRecorded(Self.purchase("0999")), lastSeq: 200)]
        guard case .commit(let writes) = plan.appended(.recorded(Self.recorded(append)), otherChains: other) else {
            Issue.record("the append is followed by the projection writes")
            return
        }
        #expect(writes.users[0].chains.keys.sorted() == ["0999", "1000"])
        #expect(writes.users[0].lastSeq == 200)
    }
}
