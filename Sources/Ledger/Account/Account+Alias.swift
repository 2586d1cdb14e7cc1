extension Account {
    /// The merge of api.md §7, decided on both accounts folded under both users' locks. The same
    /// pair again decides `[]`. Refused (409 `alias_conflict`): an alias of another user, an id
    /// that has aliases of its own (chains of aliases would make one id name two users over
    /// time), and a target that is itself an alias (the caller must name the user it points to:
    /// following it silently would merge into someone the caller did not name).
    static func decideMerge(userId: String, alias: String, aliasAccount: Account, target: Account, at: Int64)
        throws(Rejection) -> [LedgerEvent]
    {
        guard alias != userId else { throw .aliasOfItself }
        if target.aliases.contains(alias) { return [] }
        if let owner = aliasAccount.aliasOf {
            throw .aliasConflict(alias: alias, reason: "\(alias) is already an alias of another user (\(owner))")
        }
        if !aliasAccount.aliases.isEmpty {
            throw .aliasConflict(alias: alias, reason: "\(alias) has aliases of its own")
        }
        if target.aliasOf != nil {
            throw .aliasConflict(alias: alias, reason: "\(userId) is itself an alias; name the user it belongs to")
        }
        return [
            .aliasMerged(userId: userId, alias: alias, moved: aliasAccount, at: at),
            .mergedInto(userId: alias, target: userId, at: at),
        ]
    }

    /// Adds an alias's account to this one. Balances add up (every debit and credit counts);
    /// an idempotency key both used keeps this user's answer (the alias's debit still counts in
    /// the sum, it happened). A grant of an entitlement both have keeps the longer one;
    /// promotional grants keep this user's on a grantId both have.
    mutating func absorb(_ other: Account, into userId: String) {
        chains.formUnion(other.chains)
        for (key, debit) in other.debits where self.debit(idempotencyKey: key.idempotencyKey) == nil {
            debits[key] = debit
        }
        for (currency, amount) in other.debited { debited[currency, default: 0] += amount }
        for (key, credit) in other.credits where credits[key] == nil { credits[key] = credit }
        for (currency, amount) in other.credited { credited[currency, default: 0] += amount }
        for (entitlement, grant) in other.grants {
            guard let mine = grants[entitlement] else {
                grants[entitlement] = grant
                continue
            }
            if let end = mine.expiresAt, grant.expiresAt.map({ $0 > end }) ?? true { grants[entitlement] = grant }
        }
        for (grantId, promotion) in other.promotions where promotions[grantId] == nil {
            var promotion = promotion
            promotion.grant.userId = userId
            promotions[grantId] = promotion
        }
        for token in other.appAccountTokens where !appAccountTokens.contains(token) { appAccountTokens.append(token) }
        if mintedAppAccountToken == nil { mintedAppAccountToken = other.mintedAppAccountToken }
        // A withdrawn consent stays with the person (the first instant Apple said so), and so
        // do the Apple Accounts the alias shared with others.
        for (appTransactionId, at) in other.consentRescinded {
            consentRescinded[appTransactionId] = min(at, consentRescinded[appTransactionId] ?? at)
        }
        for (appTransactionId, users) in other.appleAccounts {
            appleAccounts[appTransactionId, default: []].formUnion(users.subtracting([userId]))
        }
    }
}
