/// The billing period a subscription product declares (config `period`, api.md §1, §3.1): the
/// six App Store offers. Money is normalised by it (MRR); the factors live in SQL
/// (`analytics.billing_periods`), the one place the rule is, so here it is only the spelling.
public enum BillingPeriod: String, Sendable, Hashable, CaseIterable {
    case week = "P1W"
    case month = "P1M"
    case twoMonths = "P2M"
    case threeMonths = "P3M"
    case sixMonths = "P6M"
    case year = "P1Y"
}
