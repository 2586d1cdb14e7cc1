/// The non-renewing purchases of one product that has a `duration`, laid end to end: each
/// gives access from its purchase for the duration, and one bought while an earlier one still
/// runs starts where that one ends (docs/api.md §1: "extends it from its end"). A revoked purchase
/// gives nothing and pushes nothing back.
struct NonRenewingStack {
    struct Period {
        var transaction: Transaction
        var originalTransactionId: String
        var start: Int64
        var end: Int64
        var revoked: Bool { transaction.revocationDate != nil }
    }

    let periods: [Period]

    init(_ purchases: [(transaction: Transaction, originalTransactionId: String)], duration: ISODuration) {
        // Purchase order, never arrival order, so the stack is the same whatever came first.
        let sorted = purchases.sorted {
            ($0.transaction.purchaseDate, $0.transaction.transactionId)
                < ($1.transaction.purchaseDate, $1.transaction.transactionId)
        }
        var periods: [Period] = []
        var runningEnd = Int64.min
        for (transaction, otid) in sorted {
            if transaction.revocationDate != nil {
                let end = duration.adding(to: transaction.purchaseDate)
                periods.append(
                    Period(
                        transaction: transaction, originalTransactionId: otid, start: transaction.purchaseDate, end: end
                    ))
                continue
            }
            let start = max(transaction.purchaseDate, runningEnd)
            let end = duration.adding(to: start)
            runningEnd = end
            periods.append(Period(transaction: transaction, originalTransactionId: otid, start: start, end: end))
        }
        self.periods = periods
    }

    /// The access the stack gives at `now`: the unbroken run of periods holding `now` (its end
    /// is when access ends), else the last run; nil when every purchase was revoked.
    func access(at now: Int64) -> (active: Bool, end: Int64, period: Period)? {
        var last: (start: Int64, end: Int64, period: Period)?
        var holding: (start: Int64, end: Int64, period: Period)?
        for period in periods where !period.revoked {
            if var run = last, period.start <= run.end {
                run.end = max(run.end, period.end)
                run.period = period
                last = run
            } else {
                last = (period.start, period.end, period)
            }
            if let run = last, run.start <= now, now < run.end { holding = run }
        }
        if let run = holding { return (true, run.end, run.period) }
        return last.map { (false, $0.end, $0.period) }
    }

    /// One period as the subscriptions list shows it, judged at `now`.
    static func judged(_ period: Period, at now: Int64) -> ChainStatus {
        let t = period.transaction
        let status: SubscriptionStatus = period.revoked ? .revoked : (now < period.end ? .active : .expired)
        return ChainStatus(
            status: status, productId: t.productId, transactionType: t.type, currentTransactionId: t.transactionId,
            purchasedAt: t.purchaseDate, expiresAt: period.end, gracePeriodExpiresAt: nil, revokedAt: t.revocationDate,
            autoRenew: false, autoRenewProductId: nil, environment: t.environment, ownership: t.inAppOwnershipType,
            offerType: t.offerType, offerDiscountType: t.offerDiscountType, appTransactionId: t.appTransactionId)
    }

    /// Every owned non-renewing purchase whose product has a duration, by product id.
    static func stacks(account: Account, chains: [String: ChainState], catalog: Catalog) -> [String: NonRenewingStack] {
        // Every render asks twice (the document, then its valid_until): most catalogs sell no
        // timed pass, and then no chain needs a second look.
        guard catalog.products.values.contains(where: { $0.duration != nil }) else { return [:] }
        var purchases: [String: [(transaction: Transaction, originalTransactionId: String)]] = [:]
        var durations: [String: ISODuration] = [:]
        for otid in account.chains {
            guard let chain = chains[otid] else { continue }
            for versions in chain.transactionVersions.values {
                let transaction = ChainState.newest(versions)
                let product = catalog.product(for: transaction)
                guard product.type == .nonRenewing, let duration = product.duration else { continue }
                purchases[transaction.productId, default: []].append((transaction, otid))
                durations[transaction.productId] = duration
            }
        }
        var stacks: [String: NonRenewingStack] = [:]
        for (productId, list) in purchases {
            stacks[productId] = NonRenewingStack(list, duration: durations[productId]!)
        }
        return stacks
    }
}
