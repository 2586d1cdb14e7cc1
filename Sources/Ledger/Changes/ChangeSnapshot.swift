/// What the change detector compares: one user's document judged at one instant, with the
/// facts behind it indexed the way transitions are found (subscriptions by chain, one-off
/// purchases by transaction).
struct ChangeSnapshot {
    var customer: Customer
    /// Every subscription view (auto-renewable, non-renewing), by originalTransactionId.
    var subscriptions: [String: SubscriptionView]
    /// Consumables and non-consumables, by transactionId.
    var oneOffs: [String: OneOff]
    /// Owned subscription chains with no view because every transaction they hold is upgraded
    /// (the replacing one has not arrived): the product of the newest, by originalTransactionId.
    var upgradedOnly: [String: String] = [:]

    /// A one-off purchase as the document counts it.
    struct OneOff {
        var originalTransactionId: String
        var productId: String
        var environment: String
        var type: ProductType
        var revoked: Bool
        /// What it credits unrevoked, by currency (a purchase's amount).
        var grants: [String: Int64]
        /// What a refund took back of `grants` (`Transaction.takenBack`), by currency: a
        /// refund's amount, and what its reversal gives back.
        var takenBack: [String: Int64]
        /// Apple's share of a prorated refund, milliunits; nil unrevoked or refunded whole.
        var revocationPercentage: Int64?

        /// What it credits now, by currency: `grants` less `takenBack`.
        var credits: [String: Int64] {
            grants.reduce(into: [:]) { $0[$1.key] = $1.value - (takenBack[$1.key] ?? 0) }
        }
    }

    init(
        userId: String, account: Account, chains: [String: ChainState], catalog: Catalog, at now: Int64, version: Int64
    ) {
        customer = CustomerView.build(
            userId: userId, account: account, chains: chains, catalog: catalog, at: now, version: version)
        var subscriptions: [String: SubscriptionView] = [:]
        for view in customer.subscriptions { subscriptions[view.originalTransactionId] = view }
        self.subscriptions = subscriptions
        var oneOffs: [String: OneOff] = [:]
        for otid in account.chains {
            guard let chain = chains[otid] else { continue }
            if subscriptions[otid] == nil, chain.currentTransaction == nil,
                let newest = chain.latestTransactions.last, newest.productType == .subscription
            {
                upgradedOnly[otid] = newest.productId
            }
            for versions in chain.transactionVersions.values {
                let transaction = ChainState.newest(versions)
                let product = catalog.product(for: transaction)
                guard product.type == .consumable || product.type == .nonConsumable else { continue }
                var grants: [String: Int64] = [:]
                var takenBack: [String: Int64] = [:]
                if product.type == .consumable {
                    for (currency, amount) in product.grants {
                        grants[currency] = amount * max(transaction.quantity, 1)
                        takenBack[currency] = transaction.takenBack(of: grants[currency]!)
                    }
                }
                let revoked = transaction.revocationDate != nil
                oneOffs[transaction.transactionId] = OneOff(
                    originalTransactionId: otid, productId: transaction.productId,
                    environment: transaction.environment, type: product.type, revoked: revoked, grants: grants,
                    takenBack: takenBack, revocationPercentage: revoked ? transaction.revocationPercentage : nil)
            }
        }
        self.oneOffs = oneOffs
    }
}
