/// Commands on a user's stream.
public enum AccountCommand: Sendable, Hashable {
    /// Bind a chain to `userId` (a purchase posted for them, or an appAccountToken naming them).
    case claim(userId: String, originalTransactionId: String, policy: TransferPolicy, at: Int64)
    case debit(userId: String, currency: String, amount: Int64, idempotencyKey: String, reason: String, at: Int64)
    /// Manual credit by an admin.
    case credit(userId: String, currency: String, amount: Int64, idempotencyKey: String, reason: String, at: Int64)
    case grant(userId: String, entitlement: String, reason: String, expiresAt: Int64?, at: Int64)
    case revoke(userId: String, entitlement: String, reason: String, at: Int64)
    /// A promotional grant (api.md §6); `grantId` is the Service's (from the idempotency key, or random).
    case promote(
        userId: String, grantId: String, entitlement: String, term: PromotionalGrantTerm, reason: String,
        idempotencyKey: String?, at: Int64)
    /// Ends a promotional grant at `at`.
    case revokePromotion(userId: String, grantId: String, at: Int64)
    /// The user's own token (api.md §7): `candidate` (a fresh random UUID, lowercased) is
    /// recorded unless one was minted before, which stays the user's token for good.
    case mintAppAccountToken(userId: String, candidate: String, at: Int64)
    /// A token the app already uses (lowercased); `owner` is who holds it now, if anyone.
    case registerAppAccountToken(userId: String, appAccountToken: String, owner: String?, at: Int64)
    /// A chain of `userId` carries `appTransactionId`, which `others` bought with before
    /// (api.md §7's `sameAppleAccountAs`): noted for a user without an appAccountToken.
    case noteAppleAccount(userId: String, appTransactionId: String, others: [String], at: Int64)
    /// Apple's RESCIND_CONSENT for an Apple Account the user bought with (recorded once).
    case rescindConsent(userId: String, appTransactionId: String, at: Int64)
    /// Merge `alias` (whose account, folded under lock, is `aliasAccount`) into `userId` (api.md §7).
    case mergeAlias(userId: String, alias: String, aliasAccount: Account, at: Int64)
}

/// What a decision needs from outside the user's own stream.
public struct AccountContext: Sendable, Hashable {
    /// Current balance of the debited currency (`CustomerView.balance`).
    public var balance: Int64
    /// Current owner of the claimed chain, if any.
    public var chainOwner: String?

    public init(balance: Int64 = 0, chainOwner: String? = nil) {
        self.balance = balance
        self.chainOwner = chainOwner
    }
}

extension Account {
    /// Decides the events of a user command. Repeats (same claim, same debit key, same grant)
    /// decide `[]`; the first debit's answer stays readable through `debit(currency:idempotencyKey:)`.
    /// A transfer yields two events: `chainClaimed` (claimant's stream) and `chainReleased`
    /// (previous owner's stream); each event's `stream` says where it goes.
    public static func decide(
        _ command: AccountCommand, _ state: Account, context: AccountContext = AccountContext()
    ) throws(Rejection) -> [LedgerEvent] {
        switch command {
        case .claim(let userId, let otid, let policy, let at):
            if state.chains.contains(otid) { return [] }
            guard let owner = context.chainOwner, owner != userId else {
                return [.chainClaimed(userId: userId, originalTransactionId: otid, from: nil, at: at)]
            }
            guard policy == .transfer else { throw .ownedByOtherUser(owner: owner) }
            return [
                .chainClaimed(userId: userId, originalTransactionId: otid, from: owner, at: at),
                .chainReleased(userId: owner, originalTransactionId: otid, to: userId, at: at),
            ]
        case .debit(let userId, let currency, let amount, let key, let reason, let at):
            if let first = state.debit(idempotencyKey: key) {
                guard first.currency == currency, first.debit.amount == amount else {
                    throw .idempotencyKeyReused(currency: first.currency, amount: first.debit.amount)
                }
                return []
            }
            guard amount > 0 else { throw .invalidAmount(amount) }
            guard context.balance >= amount else { throw .insufficientBalance(balance: context.balance) }
            return [
                .balanceDebited(
                    userId: userId, currency: currency, amount: amount, idempotencyKey: key, reason: reason,
                    balanceAfter: context.balance - amount, at: at)
            ]
        case .credit(let userId, let currency, let amount, let key, let reason, let at):
            if state.credits[BalanceKey(currency: currency, idempotencyKey: key)] != nil { return [] }
            guard amount > 0 else { throw .invalidAmount(amount) }
            return [
                .balanceCredited(
                    userId: userId, currency: currency, amount: amount, idempotencyKey: key, reason: reason, at: at)
            ]
        case .grant(let userId, let entitlement, let reason, let expiresAt, let at):
            if let existing = state.grants[entitlement], existing.expiresAt == expiresAt { return [] }
            return [
                .entitlementGranted(
                    userId: userId, entitlement: entitlement, reason: reason, expiresAt: expiresAt, at: at)
            ]
        case .revoke(let userId, let entitlement, let reason, let at):
            if state.grants[entitlement] == nil { return [] }
            return [.entitlementRevoked(userId: userId, entitlement: entitlement, reason: reason, at: at)]
        case .promote(let userId, let grantId, let entitlement, let term, let reason, let key, let at):
            if let existing = state.promotions[grantId] {
                let first = existing.grant
                guard first.entitlement == entitlement, first.reason == reason, first.term == term else {
                    throw .grantIdempotencyKeyReused(grantId: grantId)
                }
                return []
            }
            let expiresAt = term.expiresAt(from: at)
            guard expiresAt > at else { throw .grantEndsInPast(expiresAt: expiresAt) }
            var duration: String?
            if case .duration(let d) = term { duration = d.description }
            return [
                .promotionalGranted(
                    PromotionalGrant(
                        userId: userId, grantId: grantId, entitlement: entitlement, expiresAt: expiresAt,
                        duration: duration, reason: reason, idempotencyKey: key, at: at))
            ]
        case .mintAppAccountToken(let userId, let candidate, let at):
            if state.mintedAppAccountToken != nil { return [] }
            return [.appAccountTokenRegistered(userId: userId, appAccountToken: candidate, minted: true, at: at)]
        case .registerAppAccountToken(let userId, let token, let owner, let at):
            if state.appAccountTokens.contains(token) { return [] }
            if let owner, owner != userId { throw .appAccountTokenTaken(owner: owner) }
            return [.appAccountTokenRegistered(userId: userId, appAccountToken: token, minted: false, at: at)]
        case .noteAppleAccount(let userId, let appTransactionId, let others, let at):
            // A user with a token is one the app names to Apple: their purchases are claimed by
            // it, so an Apple Account in common is no surprise worth a hint.
            guard state.appAccountTokens.isEmpty else { return [] }
            // A shared device (a demo iPad, a family's account) may be seen with many users: the
            // hint names the first few, so an Apple Account costs each user at most that many events.
            let known = state.appleAccounts[appTransactionId] ?? []
            let room = Account.sameAppleAccountLimit - known.count
            guard room > 0 else { return [] }
            return Set(others).subtracting(known).subtracting([userId]).sorted().prefix(room).map {
                .appleAccountShared(userId: userId, appTransactionId: appTransactionId, sharedWith: $0, at: at)
            }
        case .rescindConsent(let userId, let appTransactionId, let at):
            if state.consentRescinded[appTransactionId] != nil { return [] }
            return [.consentRescinded(userId: userId, appTransactionId: appTransactionId, at: at)]
        case .mergeAlias(let userId, let alias, let aliasAccount, let at):
            return try decideMerge(userId: userId, alias: alias, aliasAccount: aliasAccount, target: state, at: at)
        case .revokePromotion(let userId, let grantId, let at):
            guard let existing = state.promotions[grantId] else { throw .unknownGrant(grantId: grantId) }
            // Revoked already, or run out: revoking again changes nothing, so records nothing.
            guard existing.isActive(at: at) else { return [] }
            return [
                .promotionalRevoked(
                    PromotionalRevocation(
                        userId: userId, grantId: grantId, entitlement: existing.grant.entitlement, at: at))
            ]
        }
    }
}
