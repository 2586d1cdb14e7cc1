import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// One reporting currency (api.md §3.1): `iap-ledger fx import` records daily rates as events, the
/// overview's `?currency=` converts every money series with them, never guessing a missing one,
/// and `asOf` shows what the rates recorded by then gave. Figures worked out by hand beside them.
@Suite(.tags(.database)) struct ExchangeRatesTests {
    @Test func aRatesFileIsReadWhole() throws {
        let rates = try ExchangeRates.parse(
            "date,currency,rate\r\n2026-12-01,EUR,1.0542\r\n2026-12-01,JPY,0.0067\n2026-12-02, EUR , 1.06\n",
            file: "r.csv", base: "USD")
        #expect(
            rates == [
                .init(date: "2026-12-01", currency: "EUR", rate: "1.0542"),
                .init(date: "2026-12-01", currency: "JPY", rate: "0.0067"),
                .init(date: "2026-12-02", currency: "EUR", rate: "1.06"),
            ])
    }

    @Test(arguments: [
        ("day,currency,rate\n2026-12-01,EUR,1.05\n", "r.csv:1: the header must be date,currency,rate"),
        ("date,currency,rate\n", "r.csv: no rates after the header"),
        ("date,currency,rate\n2026-02-30,EUR,1.05\n", #"r.csv:2: date must be YYYY-MM-DD, got "2026-02-30""#),
        (
            "date,currency,rate\n2026-12-01,eur,1.05\n",
            #"r.csv:2: currency must be an ISO 4217 code (three capital letters), got "eur""#
        ),
        ("date,currency,rate\n2026-12-01,USD,1\n", "r.csv:2: USD is the base currency (always 1)"),
        ("date,currency,rate\n2026-12-01,EUR,0\n", #"r.csv:2: rate must be a positive decimal number, got "0""#),
        ("date,currency,rate\n2026-12-01,EUR,-1.2\n", #"r.csv:2: rate must be a positive decimal number, got "-1.2""#),
        (
            "date,currency,rate\n2026-12-01,EUR,1.05\n2026-12-01,EUR,1.06\n",
            "r.csv:3: EUR on 2026-12-01 is also on line 2"
        ),
        ("date,currency,rate\n2026-12-01,EUR\n", #"r.csv:2: expected date,currency,rate, got "2026-12-01,EUR""#),
    ])
    func aBadFileNamesItsLine(text: String, message: String) {
        #expect {
            _ = try ExchangeRates.parse(text, file: "r.csv", base: "USD")
        } throws: { error in
            "\(error)" == message
        }
    }

    /// The CLI records one event, or nothing and one line naming the cause.
    @Test func fxImportRecordsTheFileAsOneEventOrNothing() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let conninfo = try TestDatabase.shared.freshDatabase()
        try "date,currency,rate\n2026-12-01,EUR,1.05\n2026-12-02,GBP,1.27\n".write(
            toFile: root + "/good.csv", atomically: true, encoding: .utf8)
        try "date,currency,rate\n2026-12-01,EUR,1.05\n2026-13-01,GBP,1.27\n".write(
            toFile: root + "/bad.csv", atomically: true, encoding: .utf8)
        let environment = ["DATABASE_URL": conninfo]

        let bad = try OpsBinary.run(["fx", "import", "--base", "USD", root + "/bad.csv"], environment: environment)
        #expect(bad.status == 2)
        #expect(
            bad.stderrLines.last
                == #"iap-ledger fx: \#(root)/bad.csv:3: date must be YYYY-MM-DD, got "2026-13-01" (see iap-ledger fx --help)"#
        )
        let noBase = try OpsBinary.run(["fx", "import", root + "/good.csv"], environment: environment)
        #expect(noBase.status == 2)
        #expect(noBase.stderrLines.last?.contains("fx import needs --base CUR") == true, "\(noBase.stderr)")

        let good = try OpsBinary.run(["fx", "import", "--base", "USD", root + "/good.csv"], environment: environment)
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout == "recorded 2 rates into USD: 2026-12-01…2026-12-02, EUR GBP\n")
        let rows = try Connection(conninfo).query(
            "SELECT stream_id, type, data->>'base', jsonb_array_length(data->'rates') FROM es.events WHERE stream_id = 'fx'"
        )
        #expect(rows.count == 1, "the bad file recorded nothing")
        #expect((0..<4).map { rows[0, $0] } == ["fx", "ExchangeRatesRecorded", "USD", "2"])
    }

    /// Converted at the latest rate on or before each amount's day; a currency without a rate is
    /// listed, never guessed; a later import restates the figures and asOf shows the earlier ones.
    @Test func theOverviewConvertsEveryMoneySeriesAndAsOfShowsWhatWasReported() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let midnight = service.clock.now / day * day
        let bought = midnight - day + day / 2  // yesterday noon
        let yesterday = String(RFC3339.format(bought).prefix(10))
        let twoDaysAgo = String(RFC3339.format(bought - day).prefix(10))
        func coins(_ id: String, _ milli: Int64, _ currency: String) -> [String: JSONValue] {
            Mint.transaction(
                id, product: TestService.coins, type: "Consumable", purchase: bought, expires: nil, signed: bought,
                ["price": .int(milli), "currency": .string(currency), "environment": "Production"])
        }
        let facts = [
            coins("9600001", 990, "USD"), coins("9600002", 1000, "EUR"), coins("9600003", 150_000, "JPY"),
            Mint.transaction(
                "9600004", product: TestService.monthly, purchase: bought, expires: bought + 30 * day,
                signed: bought, ["price": .int(9990), "currency": "EUR", "environment": "Production"]),
        ]
        for fields in facts { #expect(try api.purchase("u-fx", Mint.signed(fields)).status == 200) }
        // An instant after the purchases and before any import (asOf covers the facts too: before
        // the purchases were recorded, it would show nothing at all).
        let beforeImports = Timestamp.nowMillis()
        try eventually("Timestamp.nowMillis() > beforeImports + 2", within: 5) {
            Timestamp.nowMillis() > beforeImports + 2
        }

        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_ledger_service")
        // The first import: EUR at 1.10 two days ago (the latest on or before yesterday).
        try ExchangeRates.record(
            [.init(date: twoDaysAgo, currency: "EUR", rate: "1.10")], base: "USD", source: "one.csv", on: connection)
        func overview(asOf: Int64? = nil, until ready: @escaping (JSONValue) -> Bool) -> JSONValue {
            let path =
                "/v1/admin/metrics/overview?from=\(RFC3339.format(midnight - 2 * day))&to=\(RFC3339.format(service.clock.now))"
                + "&currency=USD" + (asOf.map { "&asOf=\(RFC3339.format($0))" } ?? "")
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
        func revenue(_ answer: JSONValue) -> Int64 { OverviewMetricsTests.total(answer["series"]?["revenue"]?["USD"]) }
        // Yesterday: 990 USD + 1000 EUR × 1.10 + 9990 EUR × 1.10 = 990 + 1100 + 10989 = 13079;
        // JPY has no rate: left out, listed. Proceeds, each movement's converted: 693 + 700 × 1.10 +
        // 6993 × 1.10 = 693 + 770 + 7692.3 = 9155.3 → 9155. MRR at today's end: 9990 × 1.10 = 10989.
        let first = overview { revenue($0) == 13079 }
        #expect(first["currency"]?.stringValue == "USD")
        #expect(first["unconverted"] == .array(["JPY"]), "\(first)")
        #expect(first["series"]?["revenue"]?.objectValue?.keys.sorted() == ["USD"])
        #expect(OverviewMetricsTests.total(first["series"]?["proceeds"]?["USD"]) == 9155)
        #expect(OverviewMetricsMRR.last(first, "USD") == 10989)
        let between = Timestamp.nowMillis()
        try eventually("Timestamp.nowMillis() > between + 2", within: 5) { Timestamp.nowMillis() > between + 2 }

        // A second import restates: EUR yesterday at 1.20 (newer day wins), and JPY at 0.0067.
        // 990 + 1000 × 1.20 + 9990 × 1.20 + 150000 × 0.0067 = 990 + 1200 + 11988 + 1005 = 15183.
        try ExchangeRates.record(
            [
                .init(date: yesterday, currency: "EUR", rate: "1.20"),
                .init(date: yesterday, currency: "JPY", rate: "0.0067"),
            ],
            base: "USD", source: "two.csv", on: connection)
        let restated = overview { revenue($0) == 15183 }
        #expect(restated["unconverted"] == .array([]))
        #expect(OverviewMetricsMRR.last(restated, "USD") == 11988, "9990 × 1.20")
        // asOf between the imports: what was reported then.
        let asOf = overview(asOf: between) { revenue($0) == 13079 }
        #expect(asOf["asOf"]?.stringValue == RFC3339.format(between))
        #expect(asOf["unconverted"] == .array(["JPY"]))
        // Before any import: only the base currency converts.
        let before = overview(asOf: beforeImports) { revenue($0) == 990 }
        #expect(before["unconverted"] == .array(["EUR", "JPY"]))

        // Without currency: each its own, nothing unconverted.
        let plain = try api.get("/v1/admin/metrics/overview?from=\(RFC3339.format(midnight - 2 * day))")
        #expect(plain.json["currency"] == .null && plain.json["unconverted"] == .array([]))
        #expect(plain.json["series"]?["revenue"]?.objectValue?.keys.sorted() == ["EUR", "JPY", "USD"])
        #expect(try api.get("/v1/admin/metrics/overview?currency=usd").status == 400)
    }
}

/// The last MRR value of a currency in an overview answer.
enum OverviewMetricsMRR {
    static func last(_ answer: JSONValue, _ currency: String) -> Int64? {
        answer["series"]?["mrr"]?[currency]?.arrayValue?.last?["value"]?.int64Value
    }
}
