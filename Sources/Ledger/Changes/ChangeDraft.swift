import JSON

/// One change of api.md §4 before it is written: everything but the user, the Customer after
/// it and the feed's id and cursor (the step and the feed add those).
public struct ChangeDraft: Sendable, Hashable {
    public var type: ChangeType
    /// nil for a change with no store environment (a debit, an admin grant).
    public var environment: String?
    /// The instant of the transition: when the ledger learned the fact, or, for what time
    /// alone changes, the instant itself.
    public var occurredAt: Int64
    public var productId: String?
    public var originalTransactionId: String?
    public var transactionId: String?
    /// The entitlements the product (or grant) concerned gives, sorted.
    public var entitlementIds: [String]
    /// What the type needs (api.md §4): TRANSFER and PRODUCT_CHANGE `from`/`to`, balance
    /// changes `currency`/`amount`/`balance`, CORRECTION `before`/`after`.
    public var details: [String: JSONValue]

    public init(
        type: ChangeType, environment: String? = nil, occurredAt: Int64, productId: String? = nil,
        originalTransactionId: String? = nil, transactionId: String? = nil, entitlementIds: [String] = [],
        details: [String: JSONValue] = [:]
    ) {
        self.type = type
        self.environment = environment
        self.occurredAt = occurredAt
        self.productId = productId
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.entitlementIds = entitlementIds
        self.details = details
    }
}

/// The changes one transition made for one user, with the document after it.
public struct ChangeStep: Sendable, Hashable {
    /// The instant the document was judged at (`occurredAt` of every change of the step).
    public var at: Int64
    public var customer: Customer
    public var changes: [ChangeDraft]
}
