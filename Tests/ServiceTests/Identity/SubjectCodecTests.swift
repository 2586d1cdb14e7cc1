import JSON
import Ledger
import Testing

@testable import AppStore
@testable import Infrastructure
@testable import Service

/// How a user's events are stored under subjects (`SubjectCodec`): each kind of user event
/// comes back as it was decided, its stored form names no user id and says nothing personal in
/// clear, a sealed part opens only in its own event, and without a key (an erased person) the
/// fold keeps what the money needs.
@Suite struct SubjectCodecTests {
    static let alice = Subject.minted(for: "alice@example.com")
    static let bob = Subject.minted(for: "bob-4471")
    static let subjects = Subjects([alice, bob])

    /// A moved account that names bob as an Apple Account neighbour and has a debit of its own.
    static var moved: Account {
        var account = Account.initial
        Account.evolve(&account, .chainClaimed(userId: "alias-9", originalTransactionId: "77", from: nil, at: 1))
        Account.evolve(
            &account,
            .balanceDebited(
                userId: "alias-9", currency: "coins", amount: 3, idempotencyKey: "alias-9-private-key",
                reason: "private words", balanceAfter: 97, at: 2))
        Account.evolve(
            &account, .appleAccountShared(userId: "alias-9", appTransactionId: "705", sharedWith: "bob-4471", at: 3))
        return account
    }

    static let events: [LedgerEvent] = [
        .chainClaimed(userId: "alice@example.com", originalTransactionId: "1001", from: "bob-4471", at: 10),
        .chainReleased(userId: "alice@example.com", originalTransactionId: "1002", to: "bob-4471", at: 11),
        .balanceDebited(
            userId: "alice@example.com", currency: "coins", amount: 30, idempotencyKey: "alice@example.com-msg-1",
            reason: "private words", balanceAfter: 70, at: 12),
        .balanceCredited(
            userId: "alice@example.com", currency: "coins", amount: 5, idempotencyKey: "alice-credit",
            reason: "private words", at: 13),
        .entitlementGranted(
            userId: "alice@example.com", entitlement: "pro", reason: "private words", expiresAt: 99, at: 14),
        .entitlementRevoked(userId: "alice@example.com", entitlement: "pro", reason: "private words", at: 15),
        .promotionalGranted(
            PromotionalGrant(
                userId: "alice@example.com", grantId: "grt_1", entitlement: "pro", expiresAt: 100, duration: "P7D",
                reason: "private words", idempotencyKey: "alice-grant", at: 16)),
        .promotionalRevoked(
            PromotionalRevocation(userId: "alice@example.com", grantId: "grt_1", entitlement: "pro", at: 17)),
        .appleAccountShared(userId: "alice@example.com", appTransactionId: "705", sharedWith: "bob-4471", at: 18),
        .consentRescinded(userId: "alice@example.com", appTransactionId: "705", at: 19),
        .aliasMerged(userId: "alice@example.com", alias: "bob-4471", moved: moved, at: 20),
        .mergedInto(userId: "alice@example.com", target: "bob-4471", at: 21),
    ]

    @Test(arguments: events) func aUserEventComesBackAsDecidedAndItsStoredFormNamesNobody(event: LedgerEvent) throws {
        let stored = try SubjectCodec.stored(event, subjects: Self.subjects)
        #expect(stored.stream == "user:" + Self.alice.subject)
        #expect(stored.schemaVersion == SubjectCodec.sealedSchemaVersion)
        let text = String(decoding: stored.data, as: UTF8.self)
        for secret in ["alice", "bob-4471", "alias-9", "private words", "msg-1", "credit", "grant\""] {
            #expect(!text.contains(secret), "\(event.typeName) stores \(secret): \(text)")
        }
        let opened = try #require(
            try SubjectCodec.unsealed(
                type: event.typeName, stream: stored.stream, data: stored.data, seq: 1, key: Self.alice.key))
        #expect(SubjectCodec.restoringUserIds(opened, subjects: Self.subjects) == event)
    }

    @Test func aChainEventIsStoredAsTheDomainEncodesIt() throws {
        let notification = LedgerEvent.consumptionAnswered(
            ConsumptionAnswer(
                notificationUUID: "n-1", transactionId: "1001", originalTransactionId: "1001", environment: "Sandbox",
                customerConsented: true, sampleContentProvided: false, deliveryStatus: "DELIVERED",
                consumptionPercentage: 30, refundPreference: nil, outcome: .accepted, attempt: 1, at: 5))
        let stored = try SubjectCodec.stored(notification, subjects: Subjects())
        #expect(stored.stream == "chain:1001" && stored.schemaVersion == 1 && stored.data == notification.encode())
    }

    @Test func aSealedPartOpensOnlyInItsOwnEvent() throws {
        let debit = try SubjectCodec.stored(Self.events[2], subjects: Self.subjects)
        let credit = try SubjectCodec.stored(Self.events[3], subjects: Self.subjects)
        // The debit's sealed part in the credit: same key, same stream, another event type.
        guard case .object(var fields) = try JSONValue.parse(credit.data),
            case .object(let debitFields) = try JSONValue.parse(debit.data)
        else { throw Failure("not objects") }
        fields["sealed"] = debitFields["sealed"]
        #expect(throws: ServiceError.self) {
            try SubjectCodec.unsealed(
                type: "BalanceCredited", stream: credit.stream, data: JSONValue.object(fields).serialized(), seq: 1,
                key: Self.alice.key)
        }
        // Another person's key opens nothing.
        #expect(throws: ServiceError.self) {
            try SubjectCodec.unsealed(
                type: "BalanceDebited", stream: debit.stream, data: debit.data, seq: 1, key: Self.bob.key)
        }
    }

    @Test func withoutTheKeyTheMoneyStaysAndTheWordsAreGone() throws {
        let debit = try SubjectCodec.stored(Self.events[2], subjects: Self.subjects)
        let erased = try #require(
            try SubjectCodec.unsealed(type: "BalanceDebited", stream: debit.stream, data: debit.data, seq: 41, key: nil)
        )
        #expect(
            erased
                == .balanceDebited(
                    userId: Self.alice.subject, currency: "coins", amount: 30, idempotencyKey: "erased:41", reason: "",
                    balanceAfter: 70, at: 12))
        let claim = try SubjectCodec.stored(Self.events[0], subjects: Self.subjects)
        #expect(
            try SubjectCodec.unsealed(type: "ChainClaimed", stream: claim.stream, data: claim.data, seq: 1, key: nil)
                == .chainClaimed(
                    userId: Self.alice.subject, originalTransactionId: "1001", from: Self.bob.subject, at: 10))
        // An erased target's merge keeps which chains it took over (what chain owners follow).
        let merge = try SubjectCodec.stored(Self.events[10], subjects: Self.subjects)
        var moved = Account.initial
        Account.evolve(&moved, .chainClaimed(userId: Self.bob.subject, originalTransactionId: "77", from: nil, at: 20))
        #expect(
            try SubjectCodec.unsealed(type: "AliasMerged", stream: merge.stream, data: merge.data, seq: 1, key: nil)
                == .aliasMerged(userId: Self.alice.subject, alias: Self.bob.subject, moved: moved, at: 20))
    }

    @Test func aUserWithoutASubjectIsNotStored() {
        #expect(throws: ServiceError.self) {
            try SubjectCodec.stored(Self.events[0], subjects: Subjects([Self.alice]))
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
