/// What one user's stream (`user:<userId>`) says: owned chains, debits, admin credits and grants.
public struct Account: Sendable, Hashable {
    /// originalTransactionIds this user owns now.
    public internal(set) var chains: Set<String>
    /// Debits by (currency, idempotencyKey), with the answer each one was given.
    public internal(set) var debits: [BalanceKey: Debit]
    /// Sum of debits per currency.
    public internal(set) var debited: [String: Int64]
    /// Admin credits by (currency, idempotencyKey).
    public internal(set) var credits: [BalanceKey: Credit]
    /// Sum of admin credits per currency.
    public internal(set) var credited: [String: Int64]
    /// Entitlements granted by an admin and not revoked.
    public internal(set) var grants: [String: AdminGrant]
    /// Promotional grants by grantId, revoked ones included (they stay listed, inactive).
    public internal(set) var promotions: [String: PromotionalGrantState] = [:]
    /// The user's appAccountTokens (lowercased), in the order they were registered.
    public internal(set) var appAccountTokens: [String] = []
    /// The token the service minted for the user (the first call of api.md §7), if any.
    public internal(set) var mintedAppAccountToken: String?
    /// appTransactionId → the other users who bought with that Apple Account before this one
    /// (AppleAccountShared events): the Customer's `sameAppleAccountAs`.
    public internal(set) var appleAccounts: [String: Set<String>] = [:]

    /// appTransactionId → when Apple said consent was withdrawn for it (RESCIND_CONSENT).
    public internal(set) var consentRescinded: [String: Int64] = [:]

    /// The first instant consent was withdrawn for an Apple Account of the user (api.md §8).
    public var consentRescindedAt: Int64? { consentRescinded.values.min() }

    /// The most users noted per Apple Account (`noteAppleAccount`).
    public static let sameAppleAccountLimit = 10

    /// Every user sharing an Apple Account with this one, sorted (api.md §7).
    public var sameAppleAccountAs: [String] { Set(appleAccounts.values.joined()).sorted() }
    /// Ids merged into this user (api.md §7), in merge order.
    public internal(set) var aliases: [String] = []
    /// The user this id was merged into, if it is an alias (its account is empty then).
    public internal(set) var aliasOf: String?
    /// The person was erased (api.md §7): the account is kept for its money under an opaque
    /// subject, and no document is rendered for it.
    public internal(set) var erased = false

    public static let initial = Account(chains: [], debits: [:], debited: [:], credits: [:], credited: [:], grants: [:])

    /// The first answer to a debit, for idempotent replies.
    public func debit(currency: String, idempotencyKey: String) -> Debit? {
        debits[BalanceKey(currency: currency, idempotencyKey: idempotencyKey)]
    }

    /// The debit recorded under `idempotencyKey` in any currency (a key names one debit of the
    /// user: reusing it for another amount or currency is a client bug, not a new debit).
    public func debit(idempotencyKey: String) -> (currency: String, debit: Debit)? {
        if let found = debits.first(where: { $0.key.idempotencyKey == idempotencyKey }) {
            return (found.key.currency, found.value)
        }
        return nil
    }
}

/// Idempotency key of a debit or credit within one user.
public struct BalanceKey: Sendable, Hashable {
    public var currency: String
    public var idempotencyKey: String
    public init(currency: String, idempotencyKey: String) {
        self.currency = currency
        self.idempotencyKey = idempotencyKey
    }
}

/// A recorded debit and the balance it answered with.
public struct Debit: Sendable, Hashable {
    public var amount: Int64
    public var reason: String
    public var balanceAfter: Int64
    public var at: Int64
}

/// A recorded admin credit.
public struct Credit: Sendable, Hashable {
    public var amount: Int64
    public var reason: String
    public var at: Int64
}

/// An entitlement granted by an admin.
public struct AdminGrant: Sendable, Hashable {
    public var reason: String
    public var expiresAt: Int64?
    public var at: Int64

    public func isActive(at now: Int64) -> Bool { expiresAt.map { now < $0 } ?? true }
}

/// `transferPolicy` of the config: who gets a chain a second user claims.
public enum TransferPolicy: String, Sendable, Hashable {
    case transfer
    case keep
}

/// Why an account command was refused (expected outcomes, not failures).
public enum Rejection: Error, Sendable, Hashable {
    /// The chain belongs to `owner` and the policy is `keep`.
    case ownedByOtherUser(owner: String)
    /// The debit would take the balance below zero; `balance` is what there is.
    case insufficientBalance(balance: Int64)
    /// Amounts must be positive.
    case invalidAmount(Int64)
    /// The debit's idempotency key was used before for another amount or currency.
    case idempotencyKeyReused(currency: String, amount: Int64)
    /// The grant's idempotency key (its grantId) was used before for another entitlement,
    /// term or reason.
    case grantIdempotencyKeyReused(grantId: String)
    /// The appAccountToken is registered to `owner`, another user.
    case appAccountTokenTaken(owner: String)
    /// No promotional grant of this user has this id.
    case unknownGrant(grantId: String)
    /// A grant must end after the instant it is made.
    case grantEndsInPast(expiresAt: Int64)
    /// An alias merge that cannot be: `alias` is an alias of another user or has aliases of its
    /// own, or the target is itself an alias (api.md §7).
    case aliasConflict(alias: String, reason: String)
    /// A user cannot be its own alias.
    case aliasOfItself

    /// Stable machine word for docs/api.md problem bodies.
    public var code: String {
        switch self {
        case .ownedByOtherUser: "owned_by_other_user"
        case .insufficientBalance: "insufficient_balance"
        case .invalidAmount: "invalid_request"
        case .idempotencyKeyReused, .grantIdempotencyKeyReused: "idempotency_key_reused"
        case .appAccountTokenTaken: "app_account_token_taken"
        case .unknownGrant: "not_found"
        case .grantEndsInPast: "invalid_request"
        case .aliasConflict: "alias_conflict"
        case .aliasOfItself: "invalid_request"
        }
    }
}
