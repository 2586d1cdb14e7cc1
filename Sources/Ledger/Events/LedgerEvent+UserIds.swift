/// Every user id an event names, and the same event naming them otherwise: the log stores a
/// user's events under an opaque subject instead of the id (docs/architecture.md, "Erasure on
/// an append-only log"), so the event store's codec maps each id to its subject on the way in
/// and back on the way out. Written here, next to the cases, so a new case that names a user
/// cannot be forgotten by the codec (the switch is exhaustive).
extension LedgerEvent {
    /// The event with every user id `f` maps, the rest unchanged.
    public func mappingUserIds(_ f: (String) -> String) -> LedgerEvent {
        switch self {
        case .transactionRecorded, .renewalInfoRecorded, .notificationReceived, .consumptionAnswered,
            .retentionAnswered, .renewalExtensionRequested:
            return self
        case .chainClaimed(let userId, let otid, let from, let at):
            return .chainClaimed(userId: f(userId), originalTransactionId: otid, from: from.map(f), at: at)
        case .chainReleased(let userId, let otid, let to, let at):
            return .chainReleased(userId: f(userId), originalTransactionId: otid, to: f(to), at: at)
        case .balanceDebited(let userId, let currency, let amount, let key, let reason, let balanceAfter, let at):
            return .balanceDebited(
                userId: f(userId), currency: currency, amount: amount, idempotencyKey: key, reason: reason,
                balanceAfter: balanceAfter, at: at)
        case .balanceCredited(let userId, let currency, let amount, let key, let reason, let at):
            return .balanceCredited(
                userId: f(userId), currency: currency, amount: amount, idempotencyKey: key, reason: reason, at: at)
        case .entitlementGranted(let userId, let entitlement, let reason, let expiresAt, let at):
            return .entitlementGranted(
                userId: f(userId), entitlement: entitlement, reason: reason, expiresAt: expiresAt, at: at)
        case .entitlementRevoked(let userId, let entitlement, let reason, let at):
            return .entitlementRevoked(userId: f(userId), entitlement: entitlement, reason: reason, at: at)
        case .promotionalGranted(var grant):
            grant.userId = f(grant.userId)
            return .promotionalGranted(grant)
        case .promotionalRevoked(var revocation):
            revocation.userId = f(revocation.userId)
            return .promotionalRevoked(revocation)
        case .appAccountTokenRegistered(let userId, let token, let minted, let at):
            return .appAccountTokenRegistered(userId: f(userId), appAccountToken: token, minted: minted, at: at)
        case .appleAccountShared(let userId, let appTransactionId, let sharedWith, let at):
            return .appleAccountShared(
                userId: f(userId), appTransactionId: appTransactionId, sharedWith: f(sharedWith), at: at)
        case .consentRescinded(let userId, let appTransactionId, let at):
            return .consentRescinded(userId: f(userId), appTransactionId: appTransactionId, at: at)
        case .aliasMerged(let userId, let alias, let moved, let at):
            return .aliasMerged(userId: f(userId), alias: f(alias), moved: moved.mappingUserIds(f), at: at)
        case .mergedInto(let userId, let target, let at):
            return .mergedInto(userId: f(userId), target: f(target), at: at)
        case .subjectErased(let userId, let at):
            return .subjectErased(userId: f(userId), at: at)
        }
    }

    /// Every user id the event names (its own user first), duplicates possible.
    public var userIds: [String] {
        var ids: [String] = []
        _ = mappingUserIds { id in
            ids.append(id)
            return id
        }
        return ids
    }
}

extension Account {
    /// The account with every other user it names (Apple Account neighbours, aliases, the
    /// target of an alias) mapped by `f`.
    public func mappingUserIds(_ f: (String) -> String) -> Account {
        var account = self
        account.appleAccounts = appleAccounts.mapValues { Set($0.map(f)) }
        account.aliases = aliases.map(f)
        account.aliasOf = aliasOf.map(f)
        return account
    }
}
