/// Everything the ledger records, past tense. Apple facts go to `chain:<originalTransactionId>`,
/// user decisions to `user:<userId>`; `stream` names the one each event belongs to.
///
/// Each case carries all a replay needs: folding the log never calls Apple again.
public indirect enum LedgerEvent: Sendable, Hashable {
    /// A verified transaction (or a re-signed version of one) was recorded.
    case transactionRecorded(Transaction)
    /// A verified renewal info was recorded.
    case renewalInfoRecorded(RenewalInfo)
    /// A notification was received (its facts are recorded as their own events).
    case notificationReceived(NotificationFact)
    /// `userId` now owns the chain; `from` is the previous owner when it was transferred.
    case chainClaimed(userId: String, originalTransactionId: String, from: String?, at: Int64)
    /// On the previous owner's stream: the chain moved to `to`.
    case chainReleased(userId: String, originalTransactionId: String, to: String, at: Int64)
    /// A debit; `balanceAfter` is the answer given when it was decided (idempotent replies).
    case balanceDebited(
        userId: String, currency: String, amount: Int64, idempotencyKey: String, reason: String,
        balanceAfter: Int64, at: Int64)
    /// A manual credit by an admin (goodwill, support).
    case balanceCredited(
        userId: String, currency: String, amount: Int64, idempotencyKey: String, reason: String, at: Int64)
    /// An admin granted an entitlement, until `expiresAt` or forever.
    case entitlementGranted(userId: String, entitlement: String, reason: String, expiresAt: Int64?, at: Int64)
    /// An admin ended an entitlement they had granted.
    case entitlementRevoked(userId: String, entitlement: String, reason: String, at: Int64)
    /// An admin gave a promotional grant (api.md §6).
    case promotionalGranted(PromotionalGrant)
    /// An admin revoked a promotional grant.
    case promotionalRevoked(PromotionalRevocation)
    /// The service answered Apple's CONSUMPTION_REQUEST (one attempt, with Apple's answer).
    case consumptionAnswered(ConsumptionAnswer)
    /// Apple's Retention Messaging request and the service's answer (docs/api.md §8).
    case retentionAnswered(RetentionAnswer)
    /// An admin asked Apple to extend a subscription's renewal date (with Apple's answer).
    case renewalExtensionRequested(RenewalExtension)
    /// `userId` owns `appAccountToken` (lowercased, api.md §7): minted by the service
    /// (`minted`) or registered as one the app already uses. Chains whose transactions carry
    /// it are claimed for `userId` (by their own `chainClaimed`, so replay needs no lookup).
    case appAccountTokenRegistered(userId: String, appAccountToken: String, minted: Bool, at: Int64)
    /// A chain of `userId` (who has no appAccountToken) carries `appTransactionId`, the Apple
    /// Account that `sharedWith`'s chains were bought with before: a hint for support shown as
    /// the Customer's `sameAppleAccountAs` (api.md §7), never a transfer. One event per pair.
    case appleAccountShared(userId: String, appTransactionId: String, sharedWith: String, at: Int64)
    /// Apple's RESCIND_CONSENT (api.md §8) about an Apple Account `userId` bought with: a parent
    /// withdrew consent for a minor at `at` (the notification's signedDate). One per user.
    case consentRescinded(userId: String, appTransactionId: String, at: Int64)
    /// On the target's stream (api.md §7): `alias` became an alias of `userId`, and `moved` is the
    /// alias's whole account at that moment (its chains, debits, credits, grants, tokens), which
    /// folding adds to the target's. The snapshot makes the event self-contained: the target's
    /// fold never reads the alias's stream, so replay and `asOf` need nothing else.
    case aliasMerged(userId: String, alias: String, moved: Account, at: Int64)
    /// On the alias's stream, with `aliasMerged`: the id now names `target`; its account is empty.
    case mergedInto(userId: String, target: String, at: Int64)
    /// An admin erased the person (api.md §7): their keys are destroyed with this event, their
    /// account is no one's any more (its chains and money stay, under the opaque subject).
    case subjectErased(userId: String, at: Int64)

    /// The stored `type` column.
    public var typeName: String {
        switch self {
        case .transactionRecorded: "TransactionRecorded"
        case .renewalInfoRecorded: "RenewalInfoRecorded"
        case .notificationReceived: "NotificationReceived"
        case .chainClaimed: "ChainClaimed"
        case .chainReleased: "ChainReleased"
        case .balanceDebited: "BalanceDebited"
        case .balanceCredited: "BalanceCredited"
        case .entitlementGranted: "EntitlementGranted"
        case .entitlementRevoked: "EntitlementRevoked"
        case .consumptionAnswered: "ConsumptionAnswered"
        case .retentionAnswered: "RetentionRequestAnswered"
        case .renewalExtensionRequested: "RenewalExtensionRequested"
        case .promotionalGranted: "PromotionalGranted"
        case .promotionalRevoked: "PromotionalRevoked"
        case .appAccountTokenRegistered: "AppAccountTokenRegistered"
        case .appleAccountShared: "AppleAccountShared"
        case .consentRescinded: "ConsentRescinded"
        case .aliasMerged: "AliasMerged"
        case .mergedInto: "MergedInto"
        case .subjectErased: "SubjectErased"
        }
    }

    /// The stored `schema_ver`; bump it (and keep decoding the old one) when a payload changes.
    public var schemaVersion: Int { 1 }

    /// All type names, for readers that want to filter or validate.
    public static let typeNames: [String] = [
        "TransactionRecorded", "RenewalInfoRecorded", "NotificationReceived", "ChainClaimed", "ChainReleased",
        "BalanceDebited", "BalanceCredited", "EntitlementGranted", "EntitlementRevoked", "ConsumptionAnswered",
        "RenewalExtensionRequested", "PromotionalGranted", "PromotionalRevoked", "AppAccountTokenRegistered",
        "AppleAccountShared", "ConsentRescinded",
        "AliasMerged", "MergedInto", "RetentionRequestAnswered", "SubjectErased",
    ]

    /// The stream this event is appended to (its `route`, named).
    public var stream: String {
        switch route {
        case .chain(let originalTransactionId): LedgerStream.chain(originalTransactionId)
        case .user(let userId): LedgerStream.user(userId)
        case .unrouted: LedgerStream.unattachedNotifications
        }
    }
}

/// Stream naming (CONTRACTS.md: `user:<userId>`, `chain:<originalTransactionId>`).
public enum LedgerStream {
    public static func chain(_ originalTransactionId: String) -> String {
        LedgerRoute.chainPrefix + originalTransactionId
    }
    public static func user(_ userId: String) -> String { LedgerRoute.userPrefix + userId }
    /// Notifications about no chain (TEST, RENEWAL_EXTENSION SUMMARY, ...).
    public static let unattachedNotifications = "apple:notifications"
}
