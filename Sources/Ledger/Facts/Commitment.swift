/// A monthly subscription with a 12-month commitment (App Store Server API 1.21): the
/// transaction's `commitmentInfo`, for a `billingPlanType` of `MONTHLY`. Access follows each
/// period's own `expiresDate`; these say where in the commitment the period is (api.md §8).
/// [commitmentInfo](https://developer.apple.com/documentation/appstoreserverapi/commitmentinfo)
public struct Commitment: Sendable, Hashable {
    /// Which period of the commitment this transaction pays (1…`totalBillingPeriods`).
    public var billingPeriodNumber: Int64?
    /// Periods in the commitment (12).
    public var totalBillingPeriods: Int64?
    /// When the whole commitment ends (moves after a billing recovery): for display, never access.
    public var commitmentExpiresDate: Int64?
    /// The whole commitment's price, in milliunits.
    public var commitmentPrice: Int64?

    public init(
        billingPeriodNumber: Int64? = nil, totalBillingPeriods: Int64? = nil, commitmentExpiresDate: Int64? = nil,
        commitmentPrice: Int64? = nil
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
    }
}

/// The renewal info's `commitmentInfo` (API 1.21): whether the commitment renews when its last
/// period ends. A customer who cancels mid-commitment turns this off; the renewal info's own
/// `autoRenewStatus` stays 1, because the remaining periods are still billed.
/// [renewalCommitmentInfo](https://developer.apple.com/documentation/appstoreserverapi/renewalcommitmentinfo)
public struct CommitmentRenewal: Sendable, Hashable {
    /// 0 off, 1 on.
    public var commitmentAutoRenewStatus: Int64?
    public var commitmentAutoRenewProductId: String?
    public var commitmentRenewalBillingPlanType: String?
    public var commitmentRenewalDate: Int64?
    /// Milliunits.
    public var commitmentRenewalPrice: Int64?

    public init(
        commitmentAutoRenewStatus: Int64? = nil, commitmentAutoRenewProductId: String? = nil,
        commitmentRenewalBillingPlanType: String? = nil, commitmentRenewalDate: Int64? = nil,
        commitmentRenewalPrice: Int64? = nil
    ) {
        self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
        self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
        self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
        self.commitmentRenewalDate = commitmentRenewalDate
        self.commitmentRenewalPrice = commitmentRenewalPrice
    }
}
