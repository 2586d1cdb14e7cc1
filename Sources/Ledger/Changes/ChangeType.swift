/// The kinds of change of api.md §4; raw values are the API's `type`.
///
/// What is announced follows access, whatever order the facts came in: a purchase first seen
/// without access (restored after it lapsed, refunded before anyone claimed it) announces
/// nothing, and the changes a user saw, folded, say what their document says.
public enum ChangeType: String, Sendable, Hashable, CaseIterable {
    /// A subscription first seen with access (in grace: followed by BILLING_ISSUE).
    case initialPurchase = "INITIAL_PURCHASE"
    /// A new period of the same product; a lapsed subscription resubscribed; a period that
    /// had run out extended (RENEWAL_EXTENDED).
    case renewal = "RENEWAL"
    /// A new period of another product (an upgrade at once, a downgrade or crossgrade at the
    /// renewal it waits for): details `from`, `to`.
    case productChange = "PRODUCT_CHANGE"
    /// Auto-renew turned off while the subscription has not expired.
    case cancellation = "CANCELLATION"
    /// Auto-renew turned on again before the subscription expired.
    case uncancellation = "UNCANCELLATION"
    /// A grace period or a billing retry began (also when a grace period ends in billing
    /// retry): details `status`.
    case billingIssue = "BILLING_ISSUE"
    /// A new period paid for, or access back, after a grace period or billing retry.
    case billingRecovered = "BILLING_RECOVERED"
    /// Access ended: a period ran out (into billing retry or expiry), a grace period ended, a
    /// stack of non-renewing purchases or an admin grant ran out. Details `status` for a
    /// subscription.
    case expiration = "EXPIRATION"
    /// Revoked by Apple (a refund, a family REVOKE); consumables per currency with what it took
    /// back (all, or a prorated share) and the balance after, and `revocationPercentage` if prorated.
    case refund = "REFUND"
    /// A refund reversed; a subscription's says the `status` it is back in (it may have run out meanwhile).
    case refundReversed = "REFUND_REVERSED"
    /// A non-renewing purchase first seen with access (one stacked behind another included).
    case nonRenewingPurchase = "NON_RENEWING_PURCHASE"
    case nonConsumablePurchase = "NON_CONSUMABLE_PURCHASE"
    /// One per currency the product grants: details `currency`, `amount`, `balance`.
    case consumablePurchase = "CONSUMABLE_PURCHASE"
    /// Details `currency`, `amount`, `balance` (after), `reason`.
    case balanceDebit = "BALANCE_DEBIT"
    /// A chain moved between users (policy `transfer`): one for each, the same `from`, `to`.
    case transfer = "TRANSFER"
    /// An admin granted an entitlement (details `reason`, `expiresAt`; a promotional grant of
    /// `POST /v1/users/{userId}/grants` also `grantId` and `duration` when one was asked) or
    /// credited a balance (`currency`, `amount`, `balance`, `reason`).
    case promotionalGrant = "PROMOTIONAL_GRANT"
    /// An admin revoked an entitlement they had granted (a promotional grant: details `grantId`).
    case promotionalRevoke = "PROMOTIONAL_REVOKE"
    /// Apple's RESCIND_CONSENT: a parent withdrew consent for a minor's Apple Account the user
    /// bought with (details `appTransactionId`); access is unchanged, what follows is the backend's.
    case consentRescinded = "CONSENT_RESCINDED"
    /// A replay (or a new catalog) changed the user's document with no new fact.
    case correction = "CORRECTION"
    case test = "TEST"

    /// The types time alone can cause (the clock emits them with `occurredAt` the instant).
    public static let timeDriven: Set<ChangeType> = [.expiration, .billingIssue]
}
