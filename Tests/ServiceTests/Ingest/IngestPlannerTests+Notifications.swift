import EventStore
import Ledger
import Testing

@testable import Infrastructure
@testable import Ingest
@testable import Service

/// What Apple pushes, through the planner: the inbox's duplicate, appAccountToken claims,
/// chains nobody claimed.
extension IngestPlannerTests {
    @Test func aNotificationTheInboxAlreadyHadFinishesAsADuplicate() {
        var plan = planner(Self.pushed("n-1", Self.purchase("1000")), claimant: nil)
        _ = plan.start(catalogVersion: 1)
        guard case .append(let append, _) = plan.read(owners: [:], streams: [:]) else {
            Issue.record("a new notification appends")
            return
        }
        #expect(append.idempotencyKey == IdempotencyKey(source: "apple-notification", externalId: "n-1"))
        guard case .finishDuplicate(let outcome, let storeDocumentOf) = plan.appended(.duplicate, otherChains: [:])
        else {
            Issue.record("the inbox's duplicate finishes the attempt")
            return
        }
        #expect(!outcome.notificationRecorded)
        #expect(outcome.transactions.map(\.recorded) == [false])
        #expect(storeDocumentOf == nil)
    }

    @Test func anUnclaimedChainIsClaimedByItsAppAccountToken() {
        var plan = planner(Self.pushed("n-1", Self.purchase("1000", token: "tok-user")), claimant: nil)
        guard case .lockAndRead(let locks, _, _) = plan.start(catalogVersion: 2) else {
            Issue.record("a notification locks and reads")
            return
        }
        #expect(locks == ["chain:1000"])
        guard case .lockAndRead(let late, _, _) = plan.read(owners: [:], streams: [:]) else {
            Issue.record("the token's user is locked after the chain")
            return
        }
        #expect(late == ["user:tok-user"])
        guard case .append(let append, _) = plan.read(owners: [:], streams: [:]) else {
            Issue.record("the claim appends")
            return
        }
        #expect(append.events.map(\.event).last == Self.claimed("tok-user", "1000"))
        guard case .commit(let writes) = plan.appended(.recorded(Self.recorded(append)), otherChains: [:]) else {
            Issue.record("the claim writes the projections")
            return
        }
        #expect(writes.catalogVersion == 2)
        #expect(writes.chainOwners == [.init(originalTransactionId: "1000", userId: "tok-user")])
        #expect(writes.users.map(\.userId) == ["tok-user"])
    }

    /// api.md §7: a registered token (given by the shell, looked up lowercased) names its user.
    @Test func anUnclaimedChainIsClaimedByTheUserItsRegisteredTokenBelongsTo() {
        let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        var plan = planner(Self.pushed("n-1", Self.purchase("1000", token: token)), claimant: nil)
        #expect(plan.tokensToLookUp == [token.lowercased()])
        plan.registeredTokens = [token.lowercased(): "u-reg"]
        _ = plan.start(catalogVersion: 2)
        guard case .lockAndRead(let late, _, _) = plan.read(owners: [:], streams: [:]) else {
            Issue.record("the token's user is locked after the chain")
            return
        }
        #expect(late == ["user:u-reg"])
        guard case .append(let append, _) = plan.read(owners: [:], streams: [:]) else {
            Issue.record("the claim appends")
            return
        }
        #expect(append.events.map(\.event).last == Self.claimed("u-reg", "1000"))
        // A chain someone owns stays theirs, and a posting claimant needs no lookup.
        var owned = planner(Self.pushed("n-2", Self.purchase("1001", token: token)), claimant: nil)
        owned.registeredTokens = [token.lowercased(): "u-reg"]
        _ = owned.start(catalogVersion: 2)
        guard case .lockAndRead(let ownerLock, _, _) = owned.read(owners: ["1001": "u-owner"], streams: [:]) else {
            Issue.record("the owner is locked after the chain")
            return
        }
        #expect(ownerLock == ["user:u-owner"])
        #expect(planner(Self.posted(Self.purchase("1002", token: token)), claimant: "u-post").tokensToLookUp.isEmpty)
    }

    @Test func aNotificationForAnUnclaimedChainWritesNoDocument() {
        var plan = planner(Self.pushed("n-1", Self.purchase("1000")), claimant: nil)
        _ = plan.start(catalogVersion: 1)
        guard case .append(let append, _) = plan.read(owners: [:], streams: [:]) else {
            Issue.record("a new notification appends")
            return
        }
        #expect(append.events.map(\.event.typeName) == ["NotificationReceived", "TransactionRecorded"])
        #expect(append.expected == ["chain:1000": 0])
        guard case .commit(let writes) = plan.appended(.recorded(Self.recorded(append)), otherChains: [:]) else {
            Issue.record("the append is followed by the (empty) projection writes")
            return
        }
        #expect(writes.catalogVersion == nil)
        #expect(writes.users.isEmpty && writes.chainOwners.isEmpty)
        guard case .finish(let outcome) = plan.committed(documents: [:]) else {
            Issue.record("a commit finishes")
            return
        }
        #expect(outcome.notificationRecorded)
        #expect(outcome.customer == nil)
    }
}
