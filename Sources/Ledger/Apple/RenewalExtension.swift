/// An admin's Extend a Subscription Renewal Date and Apple's answer (docs/api.md §5). Appended
/// to the chain's stream; folds keep no state from it: the new expiry arrives as Apple's
/// re-signed transaction (the answer's refresh, or the RENEWAL_EXTENDED notification).
public struct RenewalExtension: Sendable, Hashable {
    public var originalTransactionId: String
    /// Where Apple found the subscription (nil when it was never reached).
    public var environment: String?
    public var extendByDays: Int64
    /// Apple's extendReasonCode: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var extendReasonCode: Int64
    /// The caller's `requestId`, sent as Apple's requestIdentifier (Apple's idempotency key).
    public var requestIdentifier: String
    public var outcome: AppleRequestOutcome
    /// When Apple's new renewal date takes effect.
    public var effectiveDate: Int64?
    public var webOrderLineItemId: String?
    public var appleErrorCode: Int64?
    public var detail: String?
    public var at: Int64

    public init(
        originalTransactionId: String, environment: String?, extendByDays: Int64, extendReasonCode: Int64,
        requestIdentifier: String, outcome: AppleRequestOutcome, effectiveDate: Int64? = nil,
        webOrderLineItemId: String? = nil, appleErrorCode: Int64? = nil, detail: String? = nil, at: Int64
    ) {
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.outcome = outcome
        self.effectiveDate = effectiveDate
        self.webOrderLineItemId = webOrderLineItemId
        self.appleErrorCode = appleErrorCode
        self.detail = detail
        self.at = at
    }
}
