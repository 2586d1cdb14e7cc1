import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §3.1: the overview's `?asOf=T` shows the figures "as they were reported then (the rates
/// and events recorded up to that instant)". A snapshot of the overview is taken at T; then a
/// full and a prorated refund, a renewal of a lapsed chain, a new subscription, a trial's
/// conversion and new exchange rates are recorded; `asOf=T` still answers the snapshot, series by
/// series, while the overview without it shows the new figures — and a replay keeps both. Every
/// figure is worked out by hand beside it.
@Suite(.tags(.database)) struct OverviewAsOfTests {
    /// The overview once `ready` holds for it (the projector runs behind the log).
    static func overview(
        _ api: ServiceHTTPClient, from: Int64, to: Int64, _ more: String = "", until ready: (JSONValue) -> Bool
    ) -> JSONValue {
        let path = "/v1/admin/metrics/overview?from=\(RFC3339.format(from))&to=\(RFC3339.format(to))" + more
        var answer = JSONValue.null
        do {
            try eventually("\(path): \(answer)", within: 30) {
                guard let response = try? api.get(path), response.status == 200 else { return false }
                answer = response.json
                return ready(answer)
            }
        } catch { Issue.record("\(error)") }
        return answer
    }

    static func total(_ answer: JSONValue, _ name: String, _ currency: String? = nil) -> Int64 {
        let series = currency.map { answer["series"]?[name]?[$0] } ?? answer["series"]?[name]
        return OverviewMetricsTests.total(series)
    }

    static func last(_ answer: JSONValue, _ name: String, _ currency: String? = nil) -> Int64? {
        let series = currency.map { answer["series"]?[name]?[$0] } ?? answer["series"]?[name]
        return series?.arrayValue?.last?["value"]?.int64Value
    }

    @Test func asOfReproducesWhatTheOverviewAnsweredThen() throws {
        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.monthly]?.period = .month
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        let (from, to) = (now - 25 * day, now + hour)
        let usd: [String: JSONValue] = ["price": .int(9990), "currency": "USD", "environment": "Production"]
        func priced(_ milli: Int64, _ currency: String, _ more: [String: JSONValue] = [:]) -> [String: JSONValue] {
            ["price": .int(milli), "currency": .string(currency), "environment": "Production"].merging(more) { $1 }
        }
        // Before T:
        // A: a monthly at 9.99 that ended 10 days ago without renewing (churned then; bought before `from`).
        let a = Mint.transaction(
            "9700001", product: TestService.monthly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day, usd)
        // B: a monthly at 4.99 EUR, 10 days into its month.
        let b = Mint.transaction(
            "9700002", product: TestService.monthly, purchase: now - 10 * day, expires: now + 20 * day,
            signed: now - 10 * day, priced(4990, "EUR"))
        // C: a free trial (price 0, intro FREE_TRIAL) that ended a day ago (churned then).
        let c = Mint.transaction(
            "9700003", product: TestService.monthly, purchase: now - 8 * day, expires: now - day,
            signed: now - 8 * day, priced(0, "USD", ["offerType": .int(1), "offerDiscountType": "FREE_TRIAL"]))
        // D: 100 coins at 0.99. E: a monthly at 2.99, 5 days in.
        let d = Mint.transaction(
            "9700004", product: TestService.coins, type: "Consumable", purchase: now - 2 * day,
            expires: nil, signed: now - 2 * day, priced(990, "USD"))
        let e = Mint.transaction(
            "9700005", product: TestService.monthly, purchase: now - 5 * day, expires: now + 25 * day,
            signed: now - 5 * day, priced(2990, "USD"))
        // G: a monthly at 1.99 (bought before `from`) whose period ended 2 days ago; Apple retries
        // the charge (billing retry: neither churned nor in MRR).
        let g = Mint.transaction(
            "9700007", product: TestService.monthly, purchase: now - 32 * day, expires: now - 2 * day,
            signed: now - 32 * day, priced(1990, "USD"))
        for (index, fields) in [a, b, c, d, e, g].enumerated() {
            #expect(try api.purchase("u-asof-\(index)", Mint.signed(fields)).status == 200)
        }
        let retry = try api.notify(
            Mint.notification(
                "DID_FAIL_TO_RENEW", transaction: g, renewal: Mint.renewal(billingRetry: true, signed: now - 2 * day)))
        #expect(retry.status == 200, "\(retry.text)")
        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_ledger_service")
        let rateDay = String(RFC3339.format(now - 30 * day).prefix(10))
        try ExchangeRates.record(
            [.init(date: rateDay, currency: "EUR", rate: "1.10")], base: "USD", source: "one.csv", on: connection)

        // The snapshot. new: B, C, E (A and G began before `from`) = 3. churned: A and C = 2 (G is in
        // billing retry, not expired). active at
        // the end: B, E = 2. MRR: USD 2990 (E; C's trial is over), EUR 4990. revenue: USD 990 +
        // 2990 = 3980, EUR 4990; proceeds: USD 693 + 2093 = 2786, EUR 4990 × 0.7 = 3493. One trial.
        // Taken once the projection holds every fact recorded so far (asOf reproduces what was shown
        // then only of facts the projection had applied): at the end of the first day A and G both
        // paid (9990 + 1990 = 11980), and G's retry keeps it out of churn.
        let snapshot = Self.overview(api, from: from, to: to) {
            Self.total($0, "new") == 3 && Self.total($0, "churned") == 2 && Self.total($0, "trialsStarted") == 1
                && Self.total($0, "revenue", "USD") == 3980 && Self.last($0, "mrr", "EUR") == 4990
                && $0["series"]?["mrr"]?["USD"]?[0]?["value"]?.int64Value == 11980
        }
        #expect(Self.last(snapshot, "activeSubscriptions") == 2)
        #expect(Self.last(snapshot, "mrr", "USD") == 2990)
        #expect(Self.total(snapshot, "proceeds", "USD") == 2786 && Self.total(snapshot, "proceeds", "EUR") == 3493)
        #expect(Self.total(snapshot, "refunded") == 0 && Self.total(snapshot, "trialsConverted") == 0)
        // In USD at EUR 1.10: revenue 3980 + 5489 = 9469; MRR 2990 + 5489 = 8479; proceeds
        // 2093 + 693 + 3842.3 (→ 3842, its day's) = 6628.
        let snapshotUSD = Self.overview(api, from: from, to: to, "&currency=USD") {
            Self.total($0, "revenue", "USD") == 9469
        }
        #expect(Self.last(snapshotUSD, "mrr", "USD") == 8479)
        #expect(Self.total(snapshotUSD, "proceeds", "USD") == 6628)
        // The default view (the last 30 days up to now), as the console asks for it.
        let snapshotDefault = try api.get("/v1/admin/metrics/overview").json
        #expect(
            Self.total(snapshotDefault, "new") == 3 && Self.total(snapshotDefault, "churned") == 2, "\(snapshotDefault)"
        )
        let asOf = Timestamp.nowMillis()
        try eventually("Timestamp.nowMillis() > asOf + 2", within: 5) { Timestamp.nowMillis() > asOf + 2 }

        // After T: E refunded in full and B by half, yesterday; A renewed 10 days ago (no longer
        // churned); F bought 3 days ago; C's trial converted yesterday; EUR restated at 1.20.
        func refunded(_ t: [String: JSONValue], percentage: Int64?) -> [String: JSONValue] {
            t.merging([
                "signedDate": .int(now - day), "revocationDate": .int(now - day), "revocationReason": .int(0),
                "revocationType": .string(percentage == nil ? "REFUND_FULL" : "REFUND_PRORATED"),
            ]) { $1 }
            .merging(percentage.map { ["revocationPercentage": .int($0)] } ?? [:]) { $1 }
        }
        for fields in [refunded(e, percentage: nil), refunded(b, percentage: 50_000)] {
            #expect(try api.notify(Mint.notification("REFUND", transaction: fields)).status == 200)
        }
        let a2 = Mint.transaction(
            "9700011", chain: "9700001", product: TestService.monthly, purchase: now - 10 * day,
            expires: now + 20 * day, signed: now - 10 * day, usd)
        let c2 = Mint.transaction(
            "9700013", chain: "9700003", product: TestService.monthly, purchase: now - day,
            expires: now + 29 * day, signed: now - day, usd)
        for renewal in [a2, c2] {
            let response = try api.notify(
                Mint.notification(
                    "DID_RENEW", transaction: renewal, renewal: Mint.renewal(signed: now - day)))
            #expect(response.status == 200, "\(response.text)")
        }
        let f = Mint.transaction(
            "9700006", product: TestService.monthly, purchase: now - 3 * day, expires: now + 27 * day,
            signed: now - 3 * day, priced(4990, "USD"))
        #expect(try api.purchase("u-asof-f", Mint.signed(f)).status == 200)
        try ExchangeRates.record(
            [.init(date: rateDay, currency: "EUR", rate: "1.20")], base: "USD", source: "two.csv", on: connection)
        // And a newer renewal info puts G in a grace period running 10 more days: its period counts in MRR.
        let grace = try api.notify(
            Mint.notification(
                "DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: g,
                renewal: Mint.renewal(billingRetry: true, grace: now + 10 * day, signed: now - day)))
        #expect(grace.status == 200, "\(grace.text)")

        // Now: new B, C, E, F = 4; churned none (A renewed, C converted, B and E revoked);
        // refunded 2; active A, C, F = 3 (G's grace is no period); MRR USD 9990 + 9990 + 4990 + 1990
        // (G in grace) = 26960 (B revoked: EUR 0);
        // revenue USD 3980 + 9990 + 9990 + 4990 = 28950; refunds USD 2990, EUR 4990 × 50 % = 2495;
        // one trial converted. In USD: revenue 28950 + 4990 × 1.20 = 34938.
        func current(_ answer: JSONValue) -> Bool {
            Self.total(answer, "new") == 4 && Self.total(answer, "churned") == 0 && Self.total(answer, "refunded") == 2
                && Self.last(answer, "activeSubscriptions") == 3 && Self.last(answer, "mrr", "USD") == 26960
                && Self.total(answer, "revenue", "USD") == 28950 && Self.total(answer, "refunds", "USD") == 2990
                && Self.total(answer, "refunds", "EUR") == 2495 && Self.total(answer, "trialsConverted") == 1
                && Self.last(answer, "mrr", "EUR") == 0
        }
        _ = Self.overview(api, from: from, to: to, until: current)
        _ = Self.overview(api, from: from, to: to, "&currency=USD") { Self.total($0, "revenue", "USD") == 34938 }

        // asOf = T: the snapshot, series by series.
        func sameAsSnapshot(_ answer: JSONValue, _ snapshot: JSONValue) {
            for name in [
                "activeSubscriptions", "mrr", "new", "churned", "refunded", "revenue", "refunds", "proceeds",
                "trialsStarted", "trialsConverted",
            ] {
                #expect(answer["series"]?[name] == snapshot["series"]?[name], "\(name): \(answer) vs \(snapshot)")
            }
            #expect(answer["unconverted"] == snapshot["unconverted"])
        }
        let path = "&asOf=\(RFC3339.format(asOf))"
        sameAsSnapshot(Self.overview(api, from: from, to: to, path) { _ in true }, snapshot)
        sameAsSnapshot(Self.overview(api, from: from, to: to, path + "&currency=USD") { _ in true }, snapshotUSD)
        // asOf alone: the default view up to asOf, as it was answered then (`to` defaults to asOf).
        let asOfDefault = try api.get("/v1/admin/metrics/overview?asOf=\(RFC3339.format(asOf))").json
        #expect(asOfDefault["to"]?.stringValue == RFC3339.format(asOf))
        sameAsSnapshot(asOfDefault, snapshotDefault)

        // The versions rebuild the tables as they stand: as of "infinity" is the projection itself.
        let reader = try Connection(service.conninfo)
        try reader.executeScript("SET ROLE iap_analyst")
        let pairs: [(StaticString, StaticString)] = [
            ("transactions", "transactions_as_of"), ("renewal_infos", "renewal_infos_as_of"),
            ("revenue_movements", "revenue_movements_as_of"),
        ]
        for (table, function) in pairs {
            let differ = try reader.query(
                """
                SELECT count(*) FROM ((SELECT * FROM analytics.\(unescaped: table) EXCEPT ALL SELECT * FROM analytics.\(unescaped: function)('infinity'))
                    UNION ALL (SELECT * FROM analytics.\(unescaped: function)('infinity') EXCEPT ALL SELECT * FROM analytics.\(unescaped: table))) d
                """ as Query)
            #expect(differ[0, 0] == "0", "analytics.\(table) and its as-of form differ")
        }

        // A replay rebuilds analytics from the log: the same answers, then and now.
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200, "\(replay.text)")
        try eventually(
            "(try? connection.query(\"SELECT 1 FROM es.checkpoints WHERE name = 'analytics:rebuild'\").isEmpty) == true",
            within: 30
        ) {
            (try? connection.query("SELECT 1 FROM es.checkpoints WHERE name = 'analytics:rebuild'").isEmpty) == true
        }
        _ = Self.overview(api, from: from, to: to, until: current)
        sameAsSnapshot(Self.overview(api, from: from, to: to, path) { _ in true }, snapshot)
        sameAsSnapshot(Self.overview(api, from: from, to: to, path + "&currency=USD") { _ in true }, snapshotUSD)
    }
}
