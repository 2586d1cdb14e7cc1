import JSON

/// Finds the changes of api.md §4 (pure: facts and instants in, changes out).
///
/// A change is a transition of what a user has, so it is found by comparing the user's
/// document before and after, judged at the same instant: a duplicate fact changes nothing
/// and emits nothing, and facts arriving in any order end at the same changes' sum. The
/// events of the write only name what a comparison cannot tell: who a chain moved from or to,
/// a debit, an admin's grant.
///
/// What time alone changes (a period's end, a grace period's end) is found the same way, by
/// judging unchanged facts at the instants the document changes by itself (`elapsed`). A write
/// first catches up with time since its user's document was last rendered (those changes carry
/// the instant they happened), then compares before and after its facts.
public enum ChangeDetector {
    /// The facts one user's document is built from.
    public struct Facts: Sendable {
        public var account: Account
        public var chains: [String: ChainState]
        /// The document's `version`.
        public var version: Int64

        public init(account: Account, chains: [String: ChainState], version: Int64) {
            self.account = account
            self.chains = chains
            self.version = version
        }
    }

    /// Time-driven steps from `announcedAt` (when the user's document was last rendered) to
    /// `now` under unchanged `facts`: one step per instant the document changed at by itself.
    /// At most `limit` steps (a user silent for years with many lapsed grants); the last one
    /// then jumps to `now`.
    public static func elapsed(
        userId: String, facts: Facts, catalog: Catalog, from announcedAt: Int64, to now: Int64, limit: Int = 64
    ) -> [ChangeStep] {
        var steps: [ChangeStep] = []
        var instant = announcedAt
        var previous: ChangeSnapshot?
        for _ in 0..<limit {
            guard
                let next = CustomerView.nextChange(
                    account: facts.account, chains: facts.chains, catalog: catalog, after: instant), next <= now
            else { break }
            let before =
                previous
                ?? ChangeSnapshot(
                    userId: userId, account: facts.account, chains: facts.chains, catalog: catalog, at: instant,
                    version: facts.version)
            let after = ChangeSnapshot(
                userId: userId, account: facts.account, chains: facts.chains, catalog: catalog, at: next,
                version: facts.version)
            let changes = compare(before, after, events: [], userId: userId, catalog: catalog, at: next)
            if !changes.isEmpty { steps.append(ChangeStep(at: next, customer: after.customer, changes: changes)) }
            previous = after
            instant = next
        }
        return steps
    }

    /// The step a write made at `now`: `before` and `after` its facts, both judged at `now`;
    /// `events` are the write's events (any stream; only this user's count). nil: nothing changed.
    public static func written(
        userId: String, before: Facts, after: Facts, events: [LedgerEvent], catalog: Catalog, at now: Int64
    ) -> ChangeStep? {
        let old = ChangeSnapshot(
            userId: userId, account: before.account, chains: before.chains, catalog: catalog, at: now,
            version: before.version)
        let new = ChangeSnapshot(
            userId: userId, account: after.account, chains: after.chains, catalog: catalog, at: now,
            version: after.version)
        let changes = compare(old, new, events: events, userId: userId, catalog: catalog, at: now)
        return changes.isEmpty ? nil : ChangeStep(at: now, customer: new.customer, changes: changes)
    }

    /// The transitions from `before` to `after`, in a fixed order: transfers, subscriptions by
    /// chain, one-off purchases by transaction, then the user's own events in log order.
    static func compare(
        _ before: ChangeSnapshot, _ after: ChangeSnapshot, events: [LedgerEvent], userId: String, catalog: Catalog,
        at now: Int64
    ) -> [ChangeDraft] {
        var changes: [ChangeDraft] = []
        let moved = transfers(events, userId: userId, before: before, after: after, catalog: catalog, at: now)
        changes += moved.changes

        let chains = Set(before.subscriptions.keys).union(after.subscriptions.keys).subtracting(moved.chains)
        for otid in chains.sorted() {
            guard let new = after.subscriptions[otid] else { continue }  // only a transfer takes one away
            changes += subscription(before.subscriptions[otid], new, catalog: catalog, at: now)
        }
        let purchases = Set(before.oneOffs.keys).union(after.oneOffs.keys)
        for transactionId in purchases.sorted() {
            guard let new = after.oneOffs[transactionId], !moved.chains.contains(new.originalTransactionId) else {
                continue
            }
            changes += oneOff(
                before.oneOffs[transactionId], new, transactionId: transactionId, balances: after.customer.balances,
                catalog: catalog, at: now)
        }
        changes += accountEvents(events, userId: userId, after: after, at: now)
        changes += lapsedGrants(before, after, events: events, userId: userId, at: now)
        return changes
    }

    // MARK: Transfers

    private static func transfers(
        _ events: [LedgerEvent], userId: String, before: ChangeSnapshot, after: ChangeSnapshot, catalog: Catalog,
        at now: Int64
    ) -> (changes: [ChangeDraft], chains: Set<String>) {
        var changes: [ChangeDraft] = []
        var chains: Set<String> = []
        for event in events {
            let otid: String, from: String, to: String
            switch event {
            case .chainClaimed(let claimant, let chain, let previous?, _) where claimant == userId:
                (otid, from, to) = (chain, previous, claimant)
            case .chainReleased(let owner, let chain, let next, _) where owner == userId:
                (otid, from, to) = (chain, owner, next)
            default:
                continue
            }
            chains.insert(otid)
            // What moved, as whichever side still has it describes it.
            let snapshot = after.subscriptions[otid] != nil || after.oneOffs.values.contains { $0.originalTransactionId == otid }
                ? after : before
            let what = describe(chain: otid, in: snapshot, catalog: catalog)
            changes.append(
                ChangeDraft(
                    type: .transfer, environment: what.environment, occurredAt: now, productId: what.productId,
                    originalTransactionId: otid, transactionId: what.transactionId,
                    entitlementIds: what.entitlements, details: ["from": .string(from), "to": .string(to)]))
        }
        return (changes, chains)
    }

    private static func describe(chain otid: String, in snapshot: ChangeSnapshot, catalog: Catalog) -> (
        productId: String?, transactionId: String?, environment: String?, entitlements: [String]
    ) {
        if let view = snapshot.subscriptions[otid] {
            let product = catalog.product(for: view.productId, transactionType: view.transactionType)
            return (view.productId, view.transactionId, view.environment, product.entitlements.sorted())
        }
        if let (transactionId, oneOff) = snapshot.oneOffs.first(where: { $0.value.originalTransactionId == otid }) {
            let product = catalog.product(
                for: oneOff.productId, transactionType: oneOff.type == .consumable ? "Consumable" : "Non-Consumable")
            return (oneOff.productId, transactionId, oneOff.environment, product.entitlements.sorted())
        }
        return (nil, nil, nil, [])
    }

    // MARK: Subscriptions

    private static func subscription(_ old: SubscriptionView?, _ new: SubscriptionView, catalog: Catalog, at now: Int64)
        -> [ChangeDraft]
    {
        let product = catalog.product(for: new.productId, transactionType: new.transactionType)
        func change(_ type: ChangeType, _ details: [String: JSONValue] = [:]) -> ChangeDraft {
            ChangeDraft(
                type: type, environment: new.environment, occurredAt: now, productId: new.productId,
                originalTransactionId: new.originalTransactionId, transactionId: new.transactionId,
                entitlementIds: product.entitlements.sorted(), details: details)
        }
        guard let old else {
            return [change(product.type == .nonRenewing ? .nonRenewingPurchase : .initialPurchase)]
        }
        if new.status == .revoked { return old.status == .revoked ? [] : [change(.refund)] }
        if old.status == .revoked { return [change(.refundReversed)] }

        var changes: [ChangeDraft] = []
        if old.transactionId != new.transactionId {
            // A new period was paid for.
            if old.productId != new.productId {
                changes.append(change(.productChange, ["from": .string(old.productId), "to": .string(new.productId)]))
            } else if old.status.isBillingIssue {
                changes.append(change(.billingRecovered))
            } else {
                changes.append(change(.renewal))
            }
        } else {
            // The same period, judged anew: a grace period began or ended, access ran out.
            let status: [String: JSONValue] = ["status": .string(new.status.rawValue)]
            if new.status.isBillingIssue && (!old.status.isBillingIssue || old.status != new.status) {
                changes.append(change(.billingIssue, status))
            } else if old.status.isBillingIssue && new.status == .active {
                changes.append(change(.billingRecovered))
            } else if !old.status.hasAccess && new.status.hasAccess {
                changes.append(change(.renewal))  // the period was extended (RENEWAL_EXTENDED)
            }
            if old.status.hasAccess && !new.status.hasAccess { changes.append(change(.expiration, status)) }
        }
        if new.status != .expired {
            if old.autoRenew && !new.autoRenew { changes.append(change(.cancellation)) }
            if !old.autoRenew && new.autoRenew { changes.append(change(.uncancellation)) }
        }
        return changes
    }

    // MARK: One-off purchases

    private static func oneOff(
        _ old: ChangeSnapshot.OneOff?, _ new: ChangeSnapshot.OneOff, transactionId: String, balances: [String: Int64],
        catalog: Catalog, at now: Int64
    ) -> [ChangeDraft] {
        let product = catalog.product(
            for: new.productId, transactionType: new.type == .consumable ? "Consumable" : "Non-Consumable")
        func change(_ type: ChangeType, _ details: [String: JSONValue] = [:]) -> ChangeDraft {
            ChangeDraft(
                type: type, environment: new.environment, occurredAt: now, productId: new.productId,
                originalTransactionId: new.originalTransactionId, transactionId: transactionId,
                entitlementIds: product.entitlements.sorted(), details: details)
        }
        func perCurrency(_ type: ChangeType, _ amounts: [String: Int64]) -> [ChangeDraft] {
            amounts.keys.sorted().map { currency in
                change(
                    type,
                    [
                        "currency": .string(currency), "amount": .number(String(amounts[currency]!)),
                        "balance": .number(String(balances[currency] ?? 0)),
                    ])
            }
        }
        let wasRevoked = old?.revoked ?? false
        switch (old == nil, wasRevoked, new.revoked) {
        case (true, _, false):
            return new.type == .consumable ? perCurrency(.consumablePurchase, new.grants) : [change(.nonConsumablePurchase)]
        case (true, _, true):
            return []  // first seen already refunded: it never gave anything
        case (false, false, true):
            return new.type == .consumable ? perCurrency(.refund, new.grants) : [change(.refund)]
        case (false, true, false):
            return new.type == .consumable ? perCurrency(.refundReversed, new.grants) : [change(.refundReversed)]
        default:
            return []
        }
    }

    // MARK: The user's own events

    private static func accountEvents(_ events: [LedgerEvent], userId: String, after: ChangeSnapshot, at now: Int64)
        -> [ChangeDraft]
    {
        var changes: [ChangeDraft] = []
        for event in events {
            switch event {
            case .balanceDebited(let user, let currency, let amount, _, let reason, let balanceAfter, _) where user == userId:
                changes.append(
                    ChangeDraft(
                        type: .balanceDebit, occurredAt: now,
                        details: [
                            "currency": .string(currency), "amount": .number(String(amount)),
                            "balance": .number(String(balanceAfter)), "reason": .string(reason),
                        ]))
            case .balanceCredited(let user, let currency, let amount, _, let reason, _) where user == userId:
                changes.append(
                    ChangeDraft(
                        type: .promotionalGrant, occurredAt: now,
                        details: [
                            "currency": .string(currency), "amount": .number(String(amount)),
                            "balance": .number(String(after.customer.balances[currency] ?? 0)),
                            "reason": .string(reason),
                        ]))
            case .entitlementGranted(let user, let entitlement, let reason, let expiresAt, _) where user == userId:
                var details: [String: JSONValue] = ["reason": .string(reason)]
                details["expiresAt"] = expiresAt.map { .string(RFC3339.format($0)) } ?? .null
                changes.append(
                    ChangeDraft(type: .promotionalGrant, occurredAt: now, entitlementIds: [entitlement], details: details))
            case .entitlementRevoked(let user, let entitlement, let reason, _) where user == userId:
                changes.append(
                    ChangeDraft(
                        type: .promotionalRevoke, occurredAt: now, entitlementIds: [entitlement],
                        details: ["reason": .string(reason)]))
            default:
                continue
            }
        }
        return changes
    }

    /// An admin grant that ran out by itself (its revocation is a PROMOTIONAL_REVOKE).
    private static func lapsedGrants(
        _ before: ChangeSnapshot, _ after: ChangeSnapshot, events: [LedgerEvent], userId: String, at now: Int64
    ) -> [ChangeDraft] {
        var revoked: Set<String> = []
        for case .entitlementRevoked(let user, let entitlement, _, _) in events where user == userId {
            revoked.insert(entitlement)
        }
        var changes: [ChangeDraft] = []
        for (name, old) in before.customer.entitlements.sorted(by: { $0.key < $1.key })
        where old.source == .admin && old.active && !revoked.contains(name) {
            if after.customer.entitlements[name]?.active == true { continue }  // something else grants it now
            changes.append(ChangeDraft(type: .expiration, occurredAt: now, entitlementIds: [name]))
        }
        return changes
    }
}

extension SubscriptionStatus {
    /// A grace period or a billing retry: Apple could not charge.
    var isBillingIssue: Bool { self == .inGracePeriod || self == .inBillingRetry }
}
