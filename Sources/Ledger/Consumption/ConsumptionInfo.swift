/// What the ledger knows about one transaction that Send Consumption Information (v2) asks for,
/// answering a `CONSUMPTION_REQUEST` (docs/api.md §5): whether it was delivered and, for a
/// consumable, how much of what it credited has been spent.
///
/// [ConsumptionRequest](https://developer.apple.com/documentation/appstoreserverapi/consumptionrequest)
public struct ConsumptionInfo: Sendable, Hashable {
    public var transactionId: String
    public var productType: ProductType
    public var deliveryStatus: DeliveryStatus
    /// Milliunits (0…100000) of the purchase's credit already spent; consumables only (nil for
    /// everything else: Apple refuses one for auto-renewable subscriptions and the ledger cannot
    /// tell how much of a non-consumable was "used"). 0 when not delivered, as Apple requires.
    public var consumptionPercentage: Int32?

    public init(
        transactionId: String, productType: ProductType, deliveryStatus: DeliveryStatus, consumptionPercentage: Int32?
    ) {
        self.transactionId = transactionId
        self.productType = productType
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
    }

    /// Apple's delivery status values.
    ///
    /// [deliveryStatus](https://developer.apple.com/documentation/appstoreserverapi/deliverystatus)
    public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable {
        case delivered = "DELIVERED"
        case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
        case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
        case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
        case undeliveredOther = "UNDELIVERED_OTHER"
    }

    /// The consumption information of `transactionId` for the user whose `account` is given
    /// (`Account.initial` when no user claimed it), with `chains` as `CustomerView.build` takes
    /// them, judged at `now` (debits, admin credits and purchases dated after it do not count).
    /// nil: the ledger has no such transaction.
    ///
    /// - `DELIVERED` when the transaction is recorded, in a chain the user owns, and grants what it
    ///   bought (not revoked: a refunded purchase grants nothing in this ledger).
    /// - `UNDELIVERED_OTHER` when it is recorded but granted to nobody (unclaimed, or owned by no
    ///   account given) or revoked.
    /// - For a consumable, `consumptionPercentage` from a FIFO attribution of the user's debits
    ///   to their credits (`ConsumptionAttribution`).
    public static func compute(
        transactionId: String, account: Account, chains: [String: ChainState], catalog: Catalog, at now: Int64
    ) -> ConsumptionInfo? {
        guard let (otid, transaction) = find(transactionId, in: chains) else { return nil }
        let product = catalog.product(for: transaction)
        let granted = account.chains.contains(otid) && transaction.revocationDate == nil
        let status: DeliveryStatus = granted ? .delivered : .undeliveredOther
        var percentage: Int32?
        if product.type == .consumable {
            percentage =
                granted
                ? ConsumptionAttribution(account: account, chains: chains, catalog: catalog, at: now)
                    .consumedMilliunits(of: transactionId)
                : 0
        }
        return ConsumptionInfo(
            transactionId: transactionId, productType: product.type, deliveryStatus: status,
            consumptionPercentage: percentage)
    }

    /// The chain holding `transactionId` and its winning version (the chain of a transaction is
    /// usually keyed by its originalTransactionId, but any given chain may hold it).
    private static func find(_ transactionId: String, in chains: [String: ChainState]) -> (String, Transaction)? {
        for (otid, chain) in chains {
            if let transaction = chain.latest(transactionId: transactionId) { return (otid, transaction) }
        }
        return nil
    }
}
