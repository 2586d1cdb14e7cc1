extension Account {
    /// Folds one user-stream event. Sets fields, nothing more.
    public static func evolve(_ state: Account, _ event: LedgerEvent) -> Account {
        var state = state
        evolve(&state, event)
        return state
    }

    /// In-place form of `evolve`, for folds.
    public static func evolve(_ state: inout Account, _ event: LedgerEvent) {
        switch event {
        case .chainClaimed(_, let otid, _, _):
            state.chains.insert(otid)
        case .chainReleased(_, let otid, _, _):
            state.chains.remove(otid)
        case .balanceDebited(_, let currency, let amount, let key, let reason, let balanceAfter, let at):
            state.debits[BalanceKey(currency: currency, idempotencyKey: key)] =
                Debit(amount: amount, reason: reason, balanceAfter: balanceAfter, at: at)
            state.debited[currency, default: 0] += amount
        case .balanceCredited(_, let currency, let amount, let key, let reason, let at):
            state.credits[BalanceKey(currency: currency, idempotencyKey: key)] =
                Credit(amount: amount, reason: reason, at: at)
            state.credited[currency, default: 0] += amount
        case .entitlementGranted(_, let entitlement, let reason, let expiresAt, let at):
            state.grants[entitlement] = AdminGrant(reason: reason, expiresAt: expiresAt, at: at)
        case .entitlementRevoked(_, let entitlement, _, _):
            state.grants[entitlement] = nil
        case .promotionalGranted(let grant):
            state.promotions[grant.grantId] = PromotionalGrantState(grant: grant)
        case .promotionalRevoked(let revocation):
            state.promotions[revocation.grantId]?.revokedAt = revocation.at
        case .appAccountTokenRegistered(_, let token, let minted, _):
            if !state.appAccountTokens.contains(token) { state.appAccountTokens.append(token) }
            if minted, state.mintedAppAccountToken == nil { state.mintedAppAccountToken = token }
        case .consentRescinded(_, let appTransactionId, let at):
            if state.consentRescinded[appTransactionId] == nil { state.consentRescinded[appTransactionId] = at }
        case .appleAccountShared(_, let appTransactionId, let sharedWith, _):
            state.appleAccounts[appTransactionId, default: []].insert(sharedWith)
        case .aliasMerged(let target, let alias, let moved, _):
            state.absorb(moved, into: target)
            if !state.aliases.contains(alias) { state.aliases.append(alias) }
        case .mergedInto(_, let target, _):
            // Everything moved with the target's aliasMerged: the id keeps only where it points.
            state = .initial
            state.aliasOf = target
        case .subjectErased:
            // Nothing personal is left to fold; the chains and balances stay, nobody's now.
            state.erased = true
        case .transactionRecorded, .renewalInfoRecorded, .notificationReceived, .consumptionAnswered,
            .renewalExtensionRequested, .retentionAnswered:
            break
        }
    }

    /// `events.reduce(.initial, evolve)`, without copies.
    public static func fold(_ events: some Sequence<LedgerEvent>, into state: Account = .initial) -> Account {
        var state = state
        for event in events { evolve(&state, event) }
        return state
    }
}
