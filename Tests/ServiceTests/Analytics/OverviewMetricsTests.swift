import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `GET /v1/admin/metrics/overview` (api.md §6) over the analytics projection of a real log.
@Suite(.tags(.database)) struct OverviewMetricsTests {
    /// The value of `series` at the bucket starting on the UTC day of `instant`.
    static func value(_ series: JSONValue?, on instant: Int64) -> Int64? {
        let day = RFC3339.format(instant / 86_400_000 * 86_400_000)
        return series?.arrayValue?.first { $0["t"]?.stringValue == day }?["value"]?.int64Value
    }

    static func total(_ series: JSONValue?) -> Int64 {
        series?.arrayValue?.compactMap { $0["value"]?.int64Value }.reduce(0, +) ?? -1
    }

    @Test func activeMrrNewChurnedAndRefundedFollowWhatWasBought() throws {
        // These Sandbox periods last as long as Production's (a real Sandbox month lasts 5
        // minutes), so the catalog declares their billing periods.
        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.monthly]?.period = .month
        configuration.apps[0].products[TestService.yearly]?.period = .year
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        // A: monthly, bought 10 days ago, running. B: yearly, 5 days ago, in euros.
        // C: monthly, bought 40 days ago, ended 10 days ago, never renewed (churned).
        // D: coins bought 3 days ago, refunded 2 days ago.
        let a = Mint.transaction(
            "9100001", product: TestService.monthly, purchase: now - 10 * day, expires: now + 20 * day,
            signed: now - 10 * day, ["price": .int(9990), "currency": "USD"])
        let b = Mint.transaction(
            "9100002", product: TestService.yearly, purchase: now - 5 * day, expires: now + 360 * day,
            signed: now - 5 * day, ["price": .int(119_880), "currency": "EUR"])
        let c = Mint.transaction(
            "9100003", product: TestService.monthly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day, ["price": .int(9990), "currency": "USD"])
        var d = Mint.transaction(
            "9100004", product: TestService.coins, type: "Consumable", purchase: now - 3 * day,
            expires: nil, signed: now - 3 * day, ["price": .int(990), "currency": "USD"])
        for (user, fields) in [("u-a", a), ("u-b", b), ("u-c", c), ("u-d", d)] {
            #expect(try api.purchase(user, Mint.signed(fields)).status == 200)
        }
        d["revocationDate"] = .int(now - 2 * day)
        d["revocationReason"] = .int(0)
        d["signedDate"] = .int(now - 2 * day)
        #expect(try api.notify(Mint.notification("REFUND", transaction: d)).status == 200)

        // The test vectors sign Sandbox facts: ask for Sandbox (Production is the default).
        let path =
            "/v1/admin/metrics/overview?from=\(RFC3339.format(now - 15 * day))&to=\(RFC3339.format(now))&environment=Sandbox"
        var answer = JSONValue.null
        try eventually("\(answer)", within: 20) {
            guard let response = try? api.get(path), response.status == 200 else { return false }
            answer = response.json
            return Self.total(answer["series"]?["refunded"]) == 1 && Self.total(answer["series"]?["new"]) == 2
        }
        let series = answer["series"]
        #expect(answer["interval"]?.stringValue == "day")
        #expect(answer["environment"]?.stringValue == "Sandbox")
        #expect(series?["activeSubscriptions"]?.arrayValue?.count == 16, "15 days and today's partial one")
        #expect(series?["activeSubscriptions"]?.arrayValue?.last?["value"]?.int64Value == 2, "A and B now")
        #expect(Self.value(series?["activeSubscriptions"], on: now - 12 * day) == 1, "C alone then")
        #expect(Self.value(series?["new"], on: now - 10 * day) == 1)
        #expect(Self.value(series?["new"], on: now - 5 * day) == 1)
        #expect(Self.value(series?["churned"], on: now - 10 * day) == 1)
        #expect(Self.total(series?["churned"]) == 1)
        #expect(Self.value(series?["refunded"], on: now - 2 * day) == 1)
        // MRR: P1M, a month's price as it is (9990, not 9990 × 30.44 / 30 = 10127 by its length);
        // P1Y, a twelfth: 119880 / 12 = 9990.
        #expect(series?["mrr"]?["USD"]?.arrayValue?.last?["value"]?.int64Value == 9990)
        #expect(series?["mrr"]?["EUR"]?.arrayValue?.last?["value"]?.int64Value == 9990)
        #expect(Self.value(series?["mrr"]?["EUR"], on: now - 12 * day) == 0, "B was not bought yet")

        // By month, and only Production: nothing here is Production.
        let monthly = try api.get(path.replacingOccurrences(of: "Sandbox", with: "Production") + "&interval=month")
        #expect(monthly.status == 200, "\(monthly.text)")
        #expect(Self.total(monthly.json["series"]?["activeSubscriptions"]) == 0)
        #expect(monthly.json["environment"]?.stringValue == "Production")
        let starts = monthly.json["series"]?["new"]?.arrayValue?.compactMap { $0["t"]?.stringValue } ?? []
        #expect(!starts.isEmpty && starts.allSatisfy { $0.contains("-01T00:00:00.000Z") }, "\(starts)")
    }

    @Test func badParametersAreRefusedAndOnlyAdminsMaySee() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        let defaults = try api.get("/v1/admin/metrics/overview")
        #expect(defaults.status == 200)
        #expect(defaults.json["environment"]?.stringValue == "Production", "Production unless asked")
        #expect(
            defaults.json["series"]?["activeSubscriptions"]?.arrayValue?.count ?? 0 >= 30, "the last 30 days by day")
        for query in [
            "interval=hour", "from=yesterday", "from=\(RFC3339.format(now))&to=\(RFC3339.format(now - day))",
            "from=\(RFC3339.format(now - 500 * day))&to=\(RFC3339.format(now))", "environment=Test",
        ] {
            let response = try api.get("/v1/admin/metrics/overview?" + query)
            #expect(response.status == 400, "\(query) \(response.text)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
        }
        #expect(
            try api.get("/v1/admin/metrics/overview?interval=week&from=\(RFC3339.format(now - 500 * day))").status
                == 200)
        #expect(try service.client("read").get("/v1/admin/metrics/overview").status == 403)
    }
}
