/// The kinds of change of api.md §4; raw values are the API's `type`.
public enum ChangeType: String, Sendable, Hashable, CaseIterable {
    case initialPurchase = "INITIAL_PURCHASE"
    case renewal = "RENEWAL"
    case productChange = "PRODUCT_CHANGE"
    /// Auto-renew turned off while the subscription still runs.
    case cancellation = "CANCELLATION"
    case uncancellation = "UNCANCELLATION"
    /// A grace period or a billing retry began.
    case billingIssue = "BILLING_ISSUE"
    case billingRecovered = "BILLING_RECOVERED"
    /// Access ended: a period ran out, a grace period ended, a non-renewing purchase or an
    /// admin grant ran out.
    case expiration = "EXPIRATION"
    /// Revoked by Apple.
    case refund = "REFUND"
    case refundReversed = "REFUND_REVERSED"
    case nonRenewingPurchase = "NON_RENEWING_PURCHASE"
    case nonConsumablePurchase = "NON_CONSUMABLE_PURCHASE"
    case consumablePurchase = "CONSUMABLE_PURCHASE"
    case balanceDebit = "BALANCE_DEBIT"
    case transfer = "TRANSFER"
    case promotionalGrant = "PROMOTIONAL_GRANT"
    case promotionalRevoke = "PROMOTIONAL_REVOKE"
    /// A replay (or a new catalog) changed the user's document with no new fact.
    case correction = "CORRECTION"
    case test = "TEST"

    /// The types time alone can cause (the clock emits them with `occurredAt` the instant).
    public static let timeDriven: Set<ChangeType> = [.expiration, .billingIssue]
}
