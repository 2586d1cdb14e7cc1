/// Which of a user's credits their debits spent: per currency, debits spend the oldest credits
/// first (FIFO). Credits are the consumable purchases of the chains the user owns
/// (`grants × quantity` less what a refund took back, as `CustomerView.creditConsumable`
/// credits them: a refunded purchase absorbs only the share the customer kept, nothing after a
/// full refund) and admin credits, ordered by when they arrived
/// (purchaseDate, or the credit's `at`), then purchases before admin credits, then by id.
///
/// Only the total spent matters: the balance never goes below zero by a debit, so spending
/// oldest-first is the same as pouring the currency's total debits into the ordered credits.
/// What a refunded credit had absorbed (the debt the balance shows) falls to the later credits.
public struct ConsumptionAttribution: Sendable, Hashable {
    /// One credit in FIFO order, with how much of it the debits spent.
    public struct Slice: Sendable, Hashable {
        public enum Source: Sendable, Hashable {
            case purchase(transactionId: String)
            case admin(idempotencyKey: String)
        }
        public var source: Source
        public var at: Int64
        public var amount: Int64
        public var spent: Int64
    }

    /// Per currency, the credits oldest first.
    public private(set) var slices: [String: [Slice]] = [:]

    public init(account: Account, chains: [String: ChainState], catalog: Catalog, at now: Int64) {
        var credits: [String: [Slice]] = [:]
        for otid in account.chains {
            guard let chain = chains[otid] else { continue }
            for transaction in chain.latestTransactions where transaction.purchaseDate <= now {
                let product = catalog.product(for: transaction)
                guard product.type == .consumable else { continue }
                let quantity = max(transaction.quantity, 1)
                for (currency, amount) in product.grants where amount > 0 {
                    let kept = transaction.kept(of: amount * quantity)
                    guard kept > 0 else { continue }
                    credits[currency, default: []].append(
                        Slice(
                            source: .purchase(transactionId: transaction.transactionId), at: transaction.purchaseDate,
                            amount: kept, spent: 0))
                }
            }
        }
        for (key, credit) in account.credits where credit.at <= now && credit.amount > 0 {
            credits[key.currency, default: []].append(
                Slice(
                    source: .admin(idempotencyKey: key.idempotencyKey), at: credit.at, amount: credit.amount, spent: 0))
        }
        var debited: [String: Int64] = [:]
        for (key, debit) in account.debits where debit.at <= now { debited[key.currency, default: 0] += debit.amount }
        for (currency, list) in credits {
            var ordered = list.sorted(by: Self.fifo)
            var remaining = debited[currency] ?? 0
            for index in ordered.indices where remaining > 0 {
                let spent = min(remaining, ordered[index].amount)
                ordered[index].spent = spent
                remaining -= spent
            }
            slices[currency] = ordered
        }
    }

    /// The share of `transactionId`'s credit spent, in milliunits rounded down; a purchase
    /// crediting several currencies answers the mean of their shares. nil: it credited nothing.
    public func consumedMilliunits(of transactionId: String) -> Int32? {
        var shares: [Int64] = []
        for list in slices.values {
            for slice in list where slice.source == .purchase(transactionId: transactionId) {
                // Full width: `spent × 100000` outgrows Int64 for a credit above ~9·10¹³.
                shares.append(slice.amount.dividingFullWidth(slice.spent.multipliedFullWidth(by: 100_000)).quotient)
            }
        }
        guard !shares.isEmpty else { return nil }
        return Int32(shares.reduce(0, +) / Int64(shares.count))
    }

    private static func fifo(_ a: Slice, _ b: Slice) -> Bool {
        (a.at, a.rank, a.id) < (b.at, b.rank, b.id)
    }
}

extension ConsumptionAttribution.Slice {
    fileprivate var rank: Int {
        if case .purchase = source { return 0 }
        return 1
    }
    fileprivate var id: String {
        switch source {
        case .purchase(let transactionId): transactionId
        case .admin(let key): key
        }
    }
}
