import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §8: "MRR counts a commitment plan's monthly price". Apple's commitment products are
/// 1-year products billed monthly (`billingPlanType` MONTHLY): each period's own price counts
/// once a month (P1M), whatever the catalog's `period` says for the product; the same product
/// billed up front counts a twelfth of its price. Live and as of an instant alike; and the
/// commission's year of service counts a commitment's periods as months.
@Suite(.tags(.database)) struct OverviewCommitmentMRRTests {
    @Test func aMonthlyCommitmentPlanCountsItsOwnPriceAndAnUpFrontYearATwelfth() throws {
        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.yearly]?.period = .year
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        // A: the yearly product as a monthly plan with a 12-month commitment, its first and
        // second months (9.99 USD each). B: the same product billed up front for a year (99.99 EUR).
        func commitment(_ period: Int) -> JSONValue {
            .object([
                "billingPeriodNumber": .int(Int64(period)), "totalBillingPeriods": 12,
                "commitmentExpiresDate": .int(now + 325 * day), "commitmentPrice": 119_880,
            ])
        }
        let a1 = Mint.transaction(
            "9450001", product: TestService.yearly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day,
            ["price": .int(9_990), "currency": "USD", "billingPlanType": "MONTHLY", "commitmentInfo": commitment(1)])
        let a = Mint.transaction(
            "9450003", chain: "9450001", product: TestService.yearly, purchase: now - 10 * day, expires: now + 20 * day,
            signed: now - 10 * day,
            ["price": .int(9_990), "currency": "USD", "billingPlanType": "MONTHLY", "commitmentInfo": commitment(2)])
        let b = Mint.transaction(
            "9450002", product: TestService.yearly, purchase: now - 5 * day, expires: now + 360 * day,
            signed: now - 5 * day,
            ["price": .int(99_990), "currency": "EUR"])
        #expect(try api.purchase("u-plan", Mint.signed(a1)).status == 200)
        #expect(try api.purchase("u-plan", Mint.signed(a)).status == 200)
        #expect(try api.purchase("u-year", Mint.signed(b)).status == 200)

        // A: 9990 × 1 (P1M) = 9990, not 9990 / 12 = 832.5 as the catalog's P1Y would have it.
        // B: 99990 × 1/12 = 8332.5; the factor is 1/12 to 20 places (0.08333…), so the sum is
        // 8332.4999…, which rounds to 8332 milliunits.
        let path =
            "/v1/admin/metrics/overview?from=\(RFC3339.format(now - 15 * day))&to=\(RFC3339.format(now))&environment=Sandbox"
        func mrr(_ answer: JSONValue, _ currency: String) -> Int64? {
            answer["series"]?["mrr"]?[currency]?.arrayValue?.last?["value"]?.int64Value
        }
        var live = JSONValue.null
        try eventually("\(live)", within: 20) {
            guard let response = try? api.get(path), response.status == 200 else { return false }
            live = response.json
            return mrr(live, "USD") != nil && mrr(live, "EUR") != nil
        }
        #expect(mrr(live, "USD") == 9_990, "\(live)")
        #expect(mrr(live, "EUR") == 8_332, "\(live)")

        // As of now (every fact recorded by then): the same rule over transactions_as_of.
        let asOf = Timestamp.nowMillis()
        try eventually("Timestamp.nowMillis() > asOf + 2", within: 5) { Timestamp.nowMillis() > asOf + 2 }
        let then = try api.get(path + "&asOf=\(RFC3339.format(asOf))")
        #expect(then.status == 200, "\(then.text)")
        #expect(mrr(then.json, "USD") == 9_990, "\(then.json)")
        #expect(mrr(then.json, "EUR") == 8_332, "\(then.json)")

        // Commission: the second month follows one month of service, not a year (the catalog's
        // P1Y would count 31,557,552 s ≥ 365 days and give 15 %): 30 % on both, proceeds
        // 9990 × 0.70 = 6993 each.
        let connection = try Connection(service.conninfo)
        for source in ["analytics.revenue_movements", "analytics.revenue_movements_as_of('infinity')"] {
            #expect(
                try AnalyticsTests.scalar(
                    connection,
                    """
                    SELECT string_agg(transaction_id || ' ' || commission_rate || ' ' || proceeds_milli, ',' ORDER BY transaction_id)
                    FROM \(source) WHERE original_transaction_id = '9450001'
                    """) == "9450001 0.30 6993,9450003 0.30 6993", "\(source)")
        }
    }
}
