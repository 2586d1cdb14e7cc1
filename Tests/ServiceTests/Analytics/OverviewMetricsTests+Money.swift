import EventStore
import Foundation
import JSON
import Ledger
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Money you can quote (api.md §3.1), first step: MRR by billing period, one environment at a
/// time. Every expected figure is worked out by hand beside it.
extension OverviewMetricsTests {
    static let weekly = "com.example.weekly"

    /// The test catalog, with the yearly declaring `"period": "P1Y"` and a weekly declaring none.
    static func moneyConfiguration() -> Configuration {
        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.yearly]?.period = .year
        configuration.apps[0].products[weekly] = .init(kind: .subscription, entitlements: ["pro"], grants: [:])
        return configuration
    }

    /// The overview of `environment` (nil: the default) once `ready` holds for it.
    static func overview(
        _ api: ServiceHTTPClient, from: Int64, to: Int64, environment: String?, until ready: (JSONValue) -> Bool
    ) -> JSONValue {
        var path = "/v1/admin/metrics/overview?from=\(RFC3339.format(from))&to=\(RFC3339.format(to))"
        if let environment { path += "&environment=\(environment)" }
        var answer = JSONValue.null
        do {
            try eventually("\(path): \(answer)", within: 20) {
                guard let response = try? api.get(path), response.status == 200 else { return false }
                answer = response.json
                return ready(answer)
            }
        } catch { Issue.record("\(error)") }
        return answer
    }

    static func lastMRR(_ answer: JSONValue, _ currency: String) -> Int64? {
        answer["series"]?["mrr"]?[currency]?.arrayValue?.last?["value"]?.int64Value
    }

    @Test func mrrNormalisesEachPaidPeriodByItsBillingPeriod() throws {
        let service = try TestService(configuration: Self.moneyConfiguration())
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        let production: [String: JSONValue] = ["environment": "Production"]
        func priced(_ milli: Int64, _ currency: String, _ more: [String: JSONValue] = [:]) -> [String: JSONValue] {
            var fields = production.merging(more) { $1 }
            fields["price"] = .int(milli)
            fields["currency"] = .string(currency)
            return fields
        }
        // USD. A yearly at 59.99 whose config says P1Y: 59990 / 12 = 4999.17 → 4999, although this
        // transaction lasts 30 days (the catalog's period wins over the length).
        let yearly = Mint.transaction(
            "9200001", product: TestService.yearly, purchase: now - 10 * day,
            expires: now + 20 * day, signed: now - 10 * day, priced(59_990, "USD"))
        // USD. A free trial (price 0, offer 1 FREE_TRIAL) and one Apple priced yet called FREE_TRIAL: 0 each.
        let trial = Mint.transaction(
            "9200002", product: TestService.monthly, purchase: now - 2 * day,
            expires: now + 5 * day, signed: now - 2 * day,
            priced(0, "USD", ["offerType": .int(1), "offerDiscountType": "FREE_TRIAL"]))
        let pricedTrial = Mint.transaction(
            "9200003", product: TestService.monthly, purchase: now - 2 * day,
            expires: now + 5 * day, signed: now - 2 * day,
            priced(9990, "USD", ["offerType": .int(1), "offerDiscountType": "FREE_TRIAL"]))
        // USD. In billing retry: its period ended a day ago and Apple retries, no grace: 0.
        let retry = Mint.transaction(
            "9200004", product: TestService.monthly, purchase: now - 31 * day,
            expires: now - day, signed: now - 31 * day, priced(9990, "USD"))
        // EUR. A weekly at 1.99 without a period, 7 days long: 1990 × 30.436875 / 7 = 8652.77 → 8653.
        let weekly = Mint.transaction(
            "9200005", product: Self.weekly, purchase: now - 2 * day,
            expires: now + 5 * day, signed: now - 2 * day, priced(1990, "EUR"))
        // GBP. In its grace period: the period ended a day ago, grace runs 15 more days. 30 days
        // long, so P1M: 4990 × 1 = 4990.
        let grace = Mint.transaction(
            "9200006", product: TestService.monthly, purchase: now - 31 * day,
            expires: now - day, signed: now - 31 * day, priced(4990, "GBP"))
        // CAD. A 20-day period without a period in the catalog: nearest by ratio is P1M
        // (30.44 / 20 = 1.52 < 20 / 7 = 2.86), so 3000 × 1 = 3000 (not 3000 × 30.44 / 20 = 4565).
        let twentyDays = Mint.transaction(
            "9200007", product: Self.weekly, purchase: now - 2 * day,
            expires: now + 18 * day, signed: now - 2 * day, priced(3000, "CAD"))
        // Sandbox. A monthly at 9.99 lasting 5 minutes (Apple's accelerated month): 9990, not
        // 9990 × 8766 (a 5-minute period scaled to 30.436875 days).
        let sandbox = Mint.transaction(
            "9200008", product: TestService.monthly, purchase: now - 1 * 60_000,
            expires: now + 4 * 60_000, signed: now - 60_000,
            ["price": .int(9990), "currency": "USD", "environment": "Sandbox"])
        // Sandbox. 4 minutes snaps to P1M too (5/4 < 4/3 from P1W's 3 minutes): 2990 in CAD.
        let sandboxFour = Mint.transaction(
            "9200009", product: Self.weekly, purchase: now - 60_000,
            expires: now + 3 * 60_000, signed: now - 60_000,
            ["price": .int(2990), "currency": "CAD", "environment": "Sandbox"])
        for (index, fields) in [yearly, trial, pricedTrial, retry, weekly, grace, twentyDays, sandbox, sandboxFour]
            .enumerated()
        {
            let response = try api.purchase("u-money-\(index)", Mint.signed(fields))
            #expect(response.status == 200, "\(response.text)")
        }
        let failed = try api.notify(
            Mint.notification(
                "DID_FAIL_TO_RENEW", transaction: retry, renewal: Mint.renewal(billingRetry: true, signed: now - day)))
        #expect(failed.status == 200, "\(failed.text)")
        let inGrace = try api.notify(
            Mint.notification(
                "DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: grace,
                renewal: Mint.renewal(billingRetry: true, grace: now + 15 * day, signed: now - day)))
        #expect(inGrace.status == 200, "\(inGrace.text)")

        let answer = Self.overview(api, from: now - 3 * day, to: service.clock.now, environment: nil) {
            // Until the projector has applied the notifications too (the grace period's renewal
            // info, the retry's): under load the purchases can be in while they are not yet.
            Self.lastMRR($0, "GBP") == 4990 && Self.lastMRR($0, "CAD") != nil && Self.total($0["series"]?["new"]) == 4
        }
        #expect(answer["environment"]?.stringValue == "Production")
        #expect(Self.lastMRR(answer, "USD") == 4999, "59990 / 12; the trials and the retry add 0: \(answer)")
        #expect(Self.lastMRR(answer, "EUR") == 8653, "1990 × 30.436875 / 7 = 8652.77")
        #expect(Self.lastMRR(answer, "GBP") == 4990, "a grace period counts")
        #expect(Self.lastMRR(answer, "CAD") == 3000, "20 days ≈ P1M")

        let sandboxAnswer = Self.overview(api, from: now - 3 * day, to: service.clock.now, environment: "Sandbox") {
            Self.lastMRR($0, "CAD") != nil
        }
        #expect(sandboxAnswer["environment"]?.stringValue == "Sandbox")
        #expect(Self.lastMRR(sandboxAnswer, "USD") == 9990, "5 minutes ≈ P1M in Sandbox: \(sandboxAnswer)")
        #expect(Self.lastMRR(sandboxAnswer, "CAD") == 2990, "4 minutes ≈ P1M in Sandbox")
        #expect(Self.lastMRR(sandboxAnswer, "EUR") == nil, "nothing of Production: \(sandboxAnswer)")

        // The same rule is the analysts' to call: one place, analytics.billing_period.
        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_analyst")
        let periods = try connection.query(
            """
            SELECT analytics.billing_period($1, 'Production', 30 * 86400), analytics.billing_period($2, 'Production', 7 * 86400),
                analytics.billing_period($2, 'Production', 20 * 86400), analytics.billing_period($2, 'Sandbox', 300),
                analytics.billing_period($2, 'Sandbox', 240), analytics.billing_period($2, 'Production', 45 * 86400),
                analytics.billing_period($2, 'Sandbox', 3600), analytics.billing_period($2, 'Production', 0)
            """, [TestService.yearly, Self.weekly])
        #expect((0..<8).map { periods[0, $0] } == ["P1Y", "P1W", "P1M", "P1M", "P1M", "P2M", "P1Y", nil])
        #expect(
            try connection.query("SELECT period FROM analytics.products WHERE product_id = $1", [TestService.yearly])[
                0, 0] == "P1Y")
    }

    /// The same purchases in Sandbox and in Production: every surface shows one of them, never
    /// their sum.
    @Test func sandboxAndProductionNeverMix() throws {
        // The monthly declares P1M, so the same 30-day period is a month in both environments
        // (undeclared, 30 days in Sandbox would be its accelerated year: an hour is P1Y there).
        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.monthly]?.period = .month
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        let today = RFC3339.format((now - hour) / day * day).prefix(10)  // the purchases' UTC day
        // In each environment: a 30-day monthly at 9.99 (MRR 9990), and 100 coins at 0.99.
        for (prefix, environment) in [("93", "Production"), ("94", "Sandbox")] {
            let monthly = Mint.transaction(
                prefix + "00001", product: TestService.monthly, purchase: now - hour, expires: now - hour + 30 * day,
                signed: now - hour, ["price": .int(9990), "currency": "USD", "environment": .string(environment)])
            let coins = Mint.transaction(
                prefix + "00002", product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil,
                signed: now - hour, ["price": .int(990), "currency": "USD", "environment": .string(environment)])
            #expect(try api.purchase("u-\(environment)", Mint.signed(monthly)).status == 200)
            #expect(try api.purchase("u-\(environment)", Mint.signed(coins)).status == 200)
        }
        #expect(try api.debit("u-Production", "coins", amount: 30, key: "spend-1").status == 200)

        for environment in [nil, "Production", "Sandbox"] {
            let answer = Self.overview(api, from: now - 2 * day, to: service.clock.now, environment: environment) {
                Self.lastMRR($0, "USD") != nil
            }
            #expect(answer["environment"]?.stringValue == environment ?? "Production")
            #expect(Self.lastMRR(answer, "USD") == 9990, "one monthly, not two (19980): \(answer)")
            #expect(Self.total(answer["series"]?["new"]) == 1)
            #expect(answer["series"]?["activeSubscriptions"]?.arrayValue?.last?["value"]?.int64Value == 1)
        }
        let bad = try api.get("/v1/admin/metrics/overview?environment=production")
        #expect(bad.status == 400)
        #expect(
            bad.json["detail"]?.stringValue?.contains(
                "environment must be Production (the default), Sandbox, Xcode or LocalTesting") == true,
            "\(bad.text)")

        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_analyst")
        // Everything above projected, the debit (recorded last) included, before reading the relations.
        try eventually("the analytics projection caught up", within: 20) {
            (try? connection.query("SELECT count(*) FROM analytics.balance_ledger"))?[0, 0] == "3"
        }
        // 9990 + 990 = 10980 a day in each environment, never 21960.
        let revenue = try connection.query(
            "SELECT environment, gross_milli, transactions FROM analytics.daily_revenue WHERE day = $1::date AND currency = 'USD' ORDER BY environment",
            [String(today)])
        #expect(revenue.count == 2)
        #expect(
            (0..<revenue.count).map { "\(revenue[$0, 0]!) \(revenue[$0, 1]!) \(revenue[$0, 2]!)" }
                == ["Production 10980 2", "Sandbox 10980 2"])
        let metrics = try connection.query(
            """
            SELECT environment, new_subscriptions, active_subscriptions, revenue_milli_by_currency::text
            FROM analytics.daily_metrics WHERE day = $1::date ORDER BY environment
            """, [String(today)])
        #expect(
            (0..<metrics.count).map { "\(metrics[$0, 0]!) \(metrics[$0, 1]!) \(metrics[$0, 2]!) \(metrics[$0, 3]!)" }
                == ["Production 1 1 {\"USD\": 10980}", "Sandbox 1 1 {\"USD\": 10980}"])
        // The coins: each purchase in its environment; the debit in none (NULL).
        let ledger = try connection.query(
            "SELECT kind, amount, coalesce(environment, 'none') FROM analytics.balance_ledger ORDER BY environment NULLS LAST, kind"
        )
        #expect(
            (0..<ledger.count).map { "\(ledger[$0, 0]!) \(ledger[$0, 1]!) \(ledger[$0, 2]!)" }
                == ["purchase 100 Production", "purchase 100 Sandbox", "debit -30 none"])
        let subscriptions = try connection.query(
            "SELECT environment, count(*) FROM analytics.subscriptions GROUP BY 1 ORDER BY 1")
        #expect(
            (0..<subscriptions.count).map { "\(subscriptions[$0, 0]!) \(subscriptions[$0, 1]!)" }
                == ["Production 1", "Sandbox 1"])
        // revenue_movements and subscription_lifecycles (migrations 0037, 0038): two charges per
        // environment, 10980 and proceeds 9990 × 0.7 + 990 × 0.7 = 6993 + 693 = 7686 in each.
        let movements = try connection.query(
            "SELECT environment, count(*), sum(amount_milli), sum(proceeds_milli) FROM analytics.revenue_movements GROUP BY 1 ORDER BY 1"
        )
        #expect(
            (0..<movements.count).map { row in (0..<4).map { movements[row, $0]! }.joined(separator: " ") }
                == ["Production 2 10980 7686", "Sandbox 2 10980 7686"])
        let lives = try connection.query(
            "SELECT environment, count(*), sum(net_milli) FROM analytics.subscription_lifecycles GROUP BY 1 ORDER BY 1")
        #expect(
            (0..<lives.count).map { row in (0..<3).map { lives[row, $0]! }.joined(separator: " ") }
                == ["Production 1 9990", "Sandbox 1 9990"])
        // The overview's money series: one environment's 10980, never 21960.
        for environment in ["Production", "Sandbox"] {
            let answer = Self.overview(api, from: now - 2 * day, to: service.clock.now, environment: environment) {
                Self.total($0["series"]?["revenue"]?["USD"]) == 10980  // both purchases projected
            }
            #expect(Self.total(answer["series"]?["revenue"]?["USD"]) == 10980, "\(answer)")
            #expect(Self.total(answer["series"]?["proceeds"]?["USD"]) == 7686)
        }
    }
}
