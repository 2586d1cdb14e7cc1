/// The user-document projection: a pure function of a user's stream, the chains they own,
/// the catalog and the instant of the question.
public enum CustomerView {
    /// Builds the document of `userId` at `now`. `chains` may hold more chains than the user
    /// owns; only `account.chains` count (facts of unclaimed chains wait for their claim).
    public static func build(
        userId: String, account: Account, chains: [String: ChainState], catalog: Catalog, at now: Int64,
        version: Int64
    ) -> Customer {
        var entitlements: [String: EntitlementState] = [:]
        var subscriptions: [SubscriptionView] = []
        var nonConsumables: [NonConsumableView] = []
        var balances: [String: Int64] = [:]

        func offer(_ name: String, _ candidate: EntitlementState) { Self.offer(name, candidate, into: &entitlements) }

        for otid in account.chains {
            guard let chain = chains[otid] else { continue }
            var judgeSubscription = false
            for versions in chain.transactionVersions.values {
                // Passed in place: a copy of a Transaction retains each of its strings, and
                // `Array`'s subscript copies (it showed as ~30 % of a replay's render in a profile);
                // an unsafe buffer's subscript lends the element instead.
                let newest = ChainState.newestIndex(versions)
                judgeSubscription =
                    versions.withUnsafeBufferPointer { versions in
                        Self.collect(
                            versions[newest], otid: otid, catalog: catalog, balances: &balances,
                            nonConsumables: &nonConsumables, entitlements: &entitlements)
                    } || judgeSubscription
            }
            guard judgeSubscription, let judged = chain.status(at: now) else { continue }
            subscriptions.append(SubscriptionView(originalTransactionId: otid, judged: judged))
            let product = catalog.product(for: judged.productId, transactionType: judged.transactionType)
            let source: EntitlementSource = product.type == .nonRenewing ? .nonRenewingSubscription : .subscription
            for name in product.entitlements {
                offer(
                    name,
                    EntitlementState(
                        active: judged.status.hasAccess, expiresAt: judged.expiresAt, productId: judged.productId,
                        source: source, originalTransactionId: otid, willRenew: judged.willRenew,
                        inGracePeriod: judged.status == .inGracePeriod))
            }
        }
        let stacks = NonRenewingStack.stacks(account: account, chains: chains, catalog: catalog)
        for (productId, stack) in stacks {
            for period in stack.periods {
                subscriptions.append(
                    SubscriptionView(
                        originalTransactionId: period.originalTransactionId,
                        judged: NonRenewingStack.judged(period, at: now)))
            }
            guard let access = stack.access(at: now) else { continue }
            let product = catalog.product(for: productId, transactionType: access.period.transaction.type)
            for name in product.entitlements {
                offer(
                    name,
                    EntitlementState(
                        active: access.active, expiresAt: access.end, productId: productId,
                        source: .nonRenewingSubscription, originalTransactionId: access.period.originalTransactionId,
                        willRenew: false, inGracePeriod: false))
            }
        }
        for (name, grant) in account.grants {
            offer(
                name,
                EntitlementState(
                    active: grant.isActive(at: now), expiresAt: grant.expiresAt, productId: nil, source: .admin,
                    originalTransactionId: nil, willRenew: false, inGracePeriod: false))
        }
        // Each grant competes like any product: the one reaching furthest decides (`isPreferred`);
        // a revoked or lapsed one stays as the inactive candidate, ending when access ended.
        for (grantId, promotion) in account.promotions {
            offer(
                promotion.grant.entitlement,
                EntitlementState(
                    active: promotion.isActive(at: now), expiresAt: promotion.end, productId: nil,
                    source: .promotional, originalTransactionId: nil, willRenew: false, inGracePeriod: false,
                    grantId: grantId))
        }
        for (currency, amount) in account.debited { balances[currency, default: 0] -= amount }
        for (currency, amount) in account.credited { balances[currency, default: 0] += amount }

        subscriptions.sort { $0.originalTransactionId < $1.originalTransactionId }
        nonConsumables.sort { ($0.productId, $0.transactionId) < ($1.productId, $1.transactionId) }
        var customer = Customer(
            userId: userId, entitlements: entitlements, subscriptions: subscriptions, nonConsumables: nonConsumables,
            balances: balances, version: version)
        // Not the user's own aliases: those are the same person, merged already.
        customer.sameAppleAccountAs = account.sameAppleAccountAs.filter { !account.aliases.contains($0) }
        customer.consentRescindedAt = account.consentRescindedAt
        return customer
    }

    /// The balance of one currency (what a debit decision needs). Balances do not depend on time.
    public static func balance(
        of currency: String, account: Account, chains: [String: ChainState], catalog: Catalog
    ) -> Int64 {
        var balances: [String: Int64] = [:]
        for otid in account.chains {
            guard let chain = chains[otid] else { continue }
            for versions in chain.transactionVersions.values {
                let transaction = versions[ChainState.newestIndex(versions)]
                let product = catalog.product(for: transaction)
                if product.type == .consumable { creditConsumable(transaction, product, into: &balances) }
            }
        }
        return (balances[currency] ?? 0) - (account.debited[currency] ?? 0) + (account.credited[currency] ?? 0)
    }

    /// The next instant after `now` at which the judged document could change with no new
    /// event: the earliest future expiry or grace end among owned chains, the end of a stacked
    /// non-renewing period, or an admin or promotional grant's expiry. nil: nothing will change by itself. The Service may cache until then.
    public static func nextChange(
        account: Account, chains: [String: ChainState], catalog: Catalog = Catalog(), after now: Int64
    ) -> Int64? {
        var next: Int64?
        let stacks = NonRenewingStack.stacks(account: account, chains: chains, catalog: catalog)
        let stacked = Set(stacks.values.flatMap { $0.periods.map(\.originalTransactionId) })
        for otid in account.chains where !stacked.contains(otid) {
            guard let instant = chains[otid]?.nextChange(after: now) else { continue }
            next = min(next ?? instant, instant)
        }
        for stack in stacks.values {
            for period in stack.periods where period.end > now { next = min(next ?? period.end, period.end) }
        }
        for grant in account.grants.values {
            if let expires = grant.expiresAt, expires > now { next = min(next ?? expires, expires) }
        }
        for promotion in account.promotions.values where promotion.end > now {
            next = min(next ?? promotion.end, promotion.end)
        }
        return next
    }

    /// One owned transaction's part of the document (its version in force); true when it is a
    /// subscription, judged with its chain.
    private static func collect(
        _ transaction: borrowing Transaction, otid: String, catalog: Catalog, balances: inout [String: Int64],
        nonConsumables: inout [NonConsumableView], entitlements: inout [String: EntitlementState]
    ) -> Bool {
        let product = catalog.product(for: transaction.productId, transactionType: transaction.type)
        switch product.type {
        case .consumable:
            creditConsumable(transaction, product, into: &balances)
        case .nonConsumable:
            nonConsumables.append(
                NonConsumableView(
                    productId: transaction.productId, transactionId: transaction.transactionId,
                    purchasedAt: transaction.purchaseDate, revokedAt: transaction.revocationDate,
                    ownership: transaction.inAppOwnershipType, appTransactionId: transaction.appTransactionId))
            for name in product.entitlements {
                offer(
                    name,
                    EntitlementState(
                        active: transaction.revocationDate == nil, expiresAt: nil,
                        productId: transaction.productId, source: .nonConsumable, originalTransactionId: otid,
                        willRenew: false, inGracePeriod: false),
                    into: &entitlements)
            }
        case .nonRenewing where product.duration != nil:
            break  // laid end to end with the product's other purchases (`NonRenewingStack`)
        case .subscription, .nonRenewing:
            return true
        }
        return false
    }

    private static func offer(
        _ name: String, _ candidate: EntitlementState, into entitlements: inout [String: EntitlementState]
    ) {
        if let existing = entitlements[name], !candidate.isPreferred(over: existing) { return }
        entitlements[name] = candidate
    }

    /// A consumable credits `grants × quantity` once per transactionId, less what a refund took
    /// back (`Transaction.takenBack`: all of it, or a prorated share), so what was already spent
    /// shows as debt. The currency stays listed.
    static func creditConsumable(
        _ transaction: borrowing Transaction, _ product: Product, into balances: inout [String: Int64]
    ) {
        let quantity = max(transaction.quantity, 1)
        for (currency, amount) in product.grants {
            balances[currency, default: 0] += transaction.kept(of: amount * quantity)
        }
    }
}
