import JSON

/// Monthly subscriptions with a 12-month commitment (App Store Server API 1.21) as the test
/// store's Apple mints them: `billingPlanType` `MONTHLY` and `commitmentInfo` on each period,
/// the renewal info's `commitmentInfo` saying whether the commitment renews.
extension TestkitMinter {
    static let commitmentPeriods: Int64 = 12

    /// Period 1 of a new commitment: one month (or `--expires`), twelve of them at the monthly price.
    static func startCommitment(_ payload: inout [String: JSONValue], renewal: inout [String: JSONValue]?, now: Int64) {
        let price = payload["price"]?.int64Value ?? price(.autoRenewable)
        let end = TestkitExpiry.adding(.init(month: Int(commitmentPeriods)), to: now)
        payload["billingPlanType"] = "MONTHLY"
        payload["commitmentInfo"] = .object([
            "billingPeriodNumber": 1, "totalBillingPeriods": .int(commitmentPeriods),
            "commitmentExpiresDate": .int(end), "commitmentPrice": .int(price * commitmentPeriods),
        ])
        renewal?["renewalBillingPlanType"] = "MONTHLY"
        renewal?["commitmentInfo"] = .object([
            "commitmentAutoRenewStatus": 1, "commitmentAutoRenewProductId": payload["productId"] ?? .null,
            "commitmentRenewalBillingPlanType": "MONTHLY", "commitmentRenewalDate": .int(end),
            "commitmentRenewalPrice": .int(price * commitmentPeriods),
        ])
    }

    /// A renewal of a commitment plan pays its next period; after the last one, a commitment
    /// that renews starts again at period 1 (Apple's "period 1 of the new commitment begins").
    static func nextCommitmentPeriod(_ next: inout [String: JSONValue], renewal: [String: JSONValue]?, start: Int64) {
        guard case .object(var info)? = next["commitmentInfo"] else { return }
        let period = (info["billingPeriodNumber"]?.int64Value ?? 0) + 1
        if period > (info["totalBillingPeriods"]?.int64Value ?? commitmentPeriods) {
            info["billingPeriodNumber"] = 1
            info["commitmentExpiresDate"] = .int(TestkitExpiry.adding(.init(month: Int(commitmentPeriods)), to: start))
        } else {
            info["billingPeriodNumber"] = .int(period)
        }
        next["commitmentInfo"] = .object(info)
    }

    /// Cancelling (or resuming) a commitment turns its renewal off (on); the monthly renewal
    /// stays on, so the periods left are still billed.
    static func setCommitmentRenewal(_ enabled: Bool, renewal: inout [String: JSONValue]?) {
        guard case .object(var info)? = renewal?["commitmentInfo"] else { return }
        info["commitmentAutoRenewStatus"] = enabled ? 1 : 0
        renewal?["commitmentInfo"] = .object(info)
    }
}
