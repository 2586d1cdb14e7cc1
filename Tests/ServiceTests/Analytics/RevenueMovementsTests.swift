import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `analytics.revenue_movements` and `daily_revenue` (api.md §3.1): one row per charge and per
/// refund, Apple's commission and the proceeds estimate, refunds on the day they happened. Every
/// expected figure is worked out by hand beside it.
@Suite(.tags(.database)) struct RevenueMovementsTests {
    struct Movement: Equatable, CustomStringConvertible {
        var transactionId: String
        var kind: String
        var amount: Int64
        var rate: String
        var proceeds: Int64
        var description: String { "\(transactionId) \(kind) \(amount) \(rate) \(proceeds)" }
    }

    /// The movements of `transactionIds`, as the analyst reads them, once there are `count`.
    static func movements(_ service: TestService, _ transactionIds: [String], count: Int) throws -> [Movement] {
        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_analyst")
        var found: [Movement] = []
        try eventually("expected \(count) movements, saw \(found)", within: 20) {
            guard
                let rows = try? connection.query(
                    """
                    SELECT transaction_id, kind, amount_milli, commission_rate::text, proceeds_milli
                    FROM analytics.revenue_movements WHERE transaction_id = ANY($1::text[])
                    ORDER BY at, transaction_id, kind
                    """, [PostgresArray.literal(transactionIds)])
            else { return false }
            found = (0..<rows.count).map {
                Movement(
                    transactionId: rows[$0, 0]!, kind: rows[$0, 1]!, amount: Int64(rows[$0, 2]!)!,
                    rate: rows[$0, 3]!, proceeds: Int64(rows[$0, 4]!)!)
            }
            return found.count == count
        }
        return found
    }

    static func priced(_ milli: Int64, _ more: [String: JSONValue] = [:]) -> [String: JSONValue] {
        ["price": .int(milli), "currency": "USD", "environment": "Production"].merging(more) { $1 }
    }

    /// Standard commission: 30 %, and 15 % for a subscription's periods once the chain's earlier
    /// paid periods add up to a year; a lapse of more than 60 days starts the year again.
    @Test func theCommissionFallsToFifteenPercentAfterAPaidYearAndALapseStartsTheYearAgain() throws {
        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.yearly]?.period = .year
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        // A yearly at 59.99 renewed once: the first year pays 30 % (59990 × 0.70 = 41993), the
        // second 15 % (59990 × 0.85 = 50991.5 → 50991), as the chain had a paid year (P1Y counts
        // 365.24 days ≥ 365).
        let first = Mint.transaction(
            "9500001", product: TestService.yearly, purchase: now - 400 * day,
            expires: now - 35 * day, signed: now - 400 * day, Self.priced(59_990))
        let second = Mint.transaction(
            "9500002", chain: "9500001", product: TestService.yearly, purchase: now - 35 * day,
            expires: now + 330 * day, signed: now - 35 * day, Self.priced(59_990))
        // The same, but renewed 61 days after the first year ended: the count starts again, 30 %.
        let lapsed = Mint.transaction(
            "9500011", product: TestService.yearly, purchase: now - 500 * day,
            expires: now - 135 * day, signed: now - 500 * day, Self.priced(59_990))
        let back = Mint.transaction(
            "9500012", chain: "9500011", product: TestService.yearly, purchase: now - 74 * day,
            expires: now + 291 * day, signed: now - 74 * day, Self.priced(59_990))
        // Thirteen 30-day monthly periods at 9.99 back to back, each counted a month (P1M snapped,
        // 2629746 s): before the 13th, 12 months = 365.24 days ≥ 365 → 15 % (9990 × 0.85 = 8491.5
        // → 8491); before the 12th, 11 months = 334.8 days → 30 % (9990 × 0.70 = 6993).
        var monthly: [[String: JSONValue]] = []
        let start = now - 13 * 30 * day - day
        for index in 0..<13 {
            let from = start + Int64(index) * 30 * day
            monthly.append(
                Mint.transaction(
                    String(9_500_100 + index), chain: "9500100", product: TestService.monthly, purchase: from,
                    expires: from + 30 * day, signed: from, Self.priced(9990)))
        }
        for fields in [first, second, lapsed, back] + monthly {
            let response = try api.purchase("u-years", Mint.signed(fields))
            #expect(response.status == 200, "\(response.text)")
        }
        let ids = ["9500001", "9500002", "9500011", "9500012", "9500111", "9500112"]
        let moves = try Self.movements(service, ids, count: ids.count)
        #expect(
            moves.sorted { $0.transactionId < $1.transactionId } == [
                Movement(transactionId: "9500001", kind: "charge", amount: 59_990, rate: "0.30", proceeds: 41_993),
                Movement(transactionId: "9500002", kind: "charge", amount: 59_990, rate: "0.15", proceeds: 50_991),
                Movement(transactionId: "9500011", kind: "charge", amount: 59_990, rate: "0.30", proceeds: 41_993),
                Movement(transactionId: "9500012", kind: "charge", amount: 59_990, rate: "0.30", proceeds: 41_993),
                Movement(transactionId: "9500111", kind: "charge", amount: 9990, rate: "0.30", proceeds: 6993),
                Movement(transactionId: "9500112", kind: "charge", amount: 9990, rate: "0.15", proceeds: 8491),
            ])
    }

    /// `small-business`: 15 % everywhere, from the first purchase (990 × 0.85 = 841.5 → 841).
    @Test func smallBusinessIsFifteenPercentEverywhere() throws {
        var configuration = TestService.configuration()
        configuration.apps[0].commission = .smallBusiness
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let now = service.clock.now
        let coins = Mint.transaction(
            "9500201", product: TestService.coins, type: "Consumable", purchase: now - hour,
            expires: nil, signed: now - hour, Self.priced(990))
        let monthly = Mint.transaction(
            "9500202", product: TestService.monthly, purchase: now - hour,
            expires: now + 30 * day, signed: now - hour, Self.priced(9990))
        for fields in [coins, monthly] {
            #expect(try service.client().purchase("u-small", Mint.signed(fields)).status == 200)
        }
        let moves = try Self.movements(service, ["9500201", "9500202"], count: 2)
        #expect(
            moves.sorted { $0.transactionId < $1.transactionId } == [
                Movement(transactionId: "9500201", kind: "charge", amount: 990, rate: "0.15", proceeds: 841),
                Movement(transactionId: "9500202", kind: "charge", amount: 9990, rate: "0.15", proceeds: 8491),
            ])
        let connection = try Connection(service.conninfo)
        #expect(
            try connection.query("SELECT commission FROM analytics.apps WHERE bundle_id = $1", [TestService.bundleId])[
                0, 0]
                == "small-business")
    }

    /// A refund is a negative row on the day it was made (not the purchase day), with its
    /// charge's rate, and Apple reversing it adds a positive row; daily_revenue sums them by day.
    @Test func aRefundAndItsReversalAreRowsOfTheirOwnOnTheirOwnDays() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        // Three distinct UTC days whatever the time now: noon three, two and one days ago.
        let noon = service.clock.now / day * day - day / 2
        let (bought, refundedAt, reversedAt) = (noon - 2 * day, noon - day, noon)
        let coins = Mint.transaction(
            "9500301", product: TestService.coins, type: "Consumable", purchase: bought,
            expires: nil, signed: bought, Self.priced(990))
        #expect(try api.purchase("u-refund", Mint.signed(coins)).status == 200)
        var refunded = coins
        refunded["revocationDate"] = .int(refundedAt)
        refunded["revocationReason"] = .int(1)
        refunded["revocationType"] = "REFUND_FULL"
        refunded["signedDate"] = .int(refundedAt)
        #expect(try api.notify(Mint.notification("REFUND", transaction: refunded)).status == 200)
        var reversed = coins
        reversed["signedDate"] = .int(reversedAt)
        #expect(try api.notify(Mint.notification("REFUND_REVERSED", transaction: reversed)).status == 200)

        // The charge: 990, proceeds 990 × 0.70 = 693; the refund takes both back; the reversal
        // gives both again.
        let moves = try Self.movements(service, ["9500301"], count: 3)
        #expect(
            moves == [
                Movement(transactionId: "9500301", kind: "charge", amount: 990, rate: "0.30", proceeds: 693),
                Movement(transactionId: "9500301", kind: "refund", amount: -990, rate: "0.30", proceeds: -693),
                Movement(transactionId: "9500301", kind: "refund", amount: 990, rate: "0.30", proceeds: 693),
            ])

        // daily_revenue, Production: the purchase day grosses 990; the refund day refunds 990 (net
        // −990); the reversal's day refunds −990 (net +990). Proceeds follow: 693, −693, 693.
        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_analyst")
        let rows = try connection.query(
            """
            SELECT day::text, transactions, gross_milli, refunded_milli, net_milli, proceeds_milli, environment
            FROM analytics.daily_revenue WHERE currency = 'USD' ORDER BY day
            """)
        func utcDay(_ at: Int64) -> String { String(RFC3339.format(at).prefix(10)) }
        #expect(
            (0..<rows.count).map { row in (0..<7).map { column in rows[row, column] ?? "NULL" } } == [
                [utcDay(bought), "1", "990", "0", "990", "693", "Production"],
                [utcDay(refundedAt), "0", "0", "990", "-990", "-693", "Production"],
                [utcDay(reversedAt), "0", "0", "-990", "990", "693", "Production"],
            ])

        // A replay of the analytics rebuilds every version from the log: the same three rows.
        let admin = try Connection(service.conninfo)
        let xmins = "SELECT string_agg(xmin::text, ',' ORDER BY seq) FROM analytics.transaction_versions"
        let before = try admin.query(xmins)[0, 0]
        let replay = try service.client("admin").post(
            "/v1/admin/replay", .object(["projections": .array(["analytics"])]))
        #expect(replay.status == 200, "\(replay.text)")
        try eventually("rebuilt", within: 20) { (try? admin.query(xmins))?[0, 0].map { $0 != before } == true }
        #expect(try Self.movements(service, ["9500301"], count: 3) == moves)
    }

    /// The overview's money and trial series (api.md §3.1), per UTC day, Production only: a trial
    /// on day 1 converting on day 2, another trial on day 2, coins bought on day 1 and refunded
    /// on day 2; the same coins in Sandbox count nowhere.
    @Test func theOverviewAddsRevenueRefundsProceedsAndTrials() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let midnight = service.clock.now / day * day
        let (dayOne, dayTwo) = (midnight - 2 * day + day / 2, midnight - day + day / 2)
        let trial: [String: JSONValue] = ["offerType": .int(1), "offerDiscountType": "FREE_TRIAL"]
        let facts = [
            Mint.transaction(
                "9500401", product: TestService.monthly, purchase: dayOne, expires: dayTwo, signed: dayOne,
                Self.priced(0, trial)),
            Mint.transaction(
                "9500402", chain: "9500401", product: TestService.monthly, purchase: dayTwo,
                expires: dayTwo + 30 * day, signed: dayTwo, Self.priced(9990)),
            Mint.transaction(
                "9500411", product: TestService.monthly, purchase: dayTwo, expires: dayTwo + 7 * day,
                signed: dayTwo, Self.priced(0, trial)),
            Mint.transaction(
                "9500421", product: TestService.coins, type: "Consumable", purchase: dayOne, expires: nil,
                signed: dayOne, Self.priced(990)),
            Mint.transaction(
                "9500431", product: TestService.coins, type: "Consumable", purchase: dayOne, expires: nil,
                signed: dayOne, Self.priced(990, ["environment": "Sandbox"])),
        ]
        for fields in facts { #expect(try api.purchase("u-overview", Mint.signed(fields)).status == 200) }
        var refunded = facts[3]
        refunded["revocationDate"] = .int(dayTwo)
        refunded["revocationType"] = "REFUND_FULL"
        refunded["signedDate"] = .int(dayTwo)
        #expect(try api.notify(Mint.notification("REFUND", transaction: refunded)).status == 200)
        _ = try Self.movements(service, ["9500402", "9500421"], count: 3)

        let answer = OverviewMetricsTests.overview(
            api, from: midnight - 2 * day, to: service.clock.now, environment: nil
        ) { $0["series"]?["trialsConverted"] != nil }
        let series = answer["series"]
        func values(_ value: JSONValue?) -> [Int64] { value?.arrayValue?.map { $0["value"]?.int64Value ?? -1 } ?? [] }
        // Day 1: the coins' 990 (proceeds 990 × 0.70 = 693), a trial started. Day 2: the first paid
        // month's 9990 (proceeds 6993), the coins refunded (990 back, −693), proceeds 6993 − 693 =
        // 6300; a trial converted and another started. Today: nothing.
        #expect(values(series?["revenue"]?["USD"]) == [990, 9990, 0], "\(answer)")
        #expect(values(series?["refunds"]?["USD"]) == [0, 990, 0])
        #expect(values(series?["proceeds"]?["USD"]) == [693, 6300, 0])
        #expect(values(series?["trialsStarted"]) == [1, 1, 0])
        #expect(values(series?["trialsConverted"]) == [0, 1, 0])

        // The lifecycle of the converted chain, as an analyst reads it.
        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_analyst")
        let lives = try connection.query(
            """
            SELECT original_transaction_id, converted::text, paid_periods, coalesce(first_paid_transaction_id, '-'),
                gross_milli, net_milli, proceeds_milli
            FROM analytics.subscription_lifecycles ORDER BY original_transaction_id
            """)
        #expect(
            (0..<lives.count).map { row in (0..<7).map { lives[row, $0] ?? "NULL" }.joined(separator: " ") } == [
                "9500401 true 1 9500402 9990 9990 6993",
                "9500411 false 0 - 0 0 0",
            ])
    }

    /// A prorated refund (REFUND_PRORATED, revocationPercentage 50000) of 100 coins at 0.99:
    /// revenue_movements gives back 990 × 0.5 = 495 (proceeds 495 × 0.70 = 346.5 → 346), the
    /// balance ledger takes back 50 coins, and still sums to analytics.balances (50).
    @Test func aProratedRefundMovesItsShareOfTheMoneyAndOfTheCoins() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        let coins = Mint.transaction(
            "9500501", product: TestService.coins, type: "Consumable", purchase: now - 2 * hour,
            expires: nil, signed: now - 2 * hour, Self.priced(990))
        #expect(try api.purchase("u-prorated", Mint.signed(coins)).status == 200)
        var refunded = coins
        refunded["revocationDate"] = .int(now - hour)
        refunded["revocationType"] = "REFUND_PRORATED"
        refunded["revocationPercentage"] = .int(50_000)
        refunded["signedDate"] = .int(now - hour)
        #expect(try api.notify(Mint.notification("REFUND", transaction: refunded)).status == 200)
        let moves = try Self.movements(service, ["9500501"], count: 2)
        #expect(
            moves == [
                Movement(transactionId: "9500501", kind: "charge", amount: 990, rate: "0.30", proceeds: 693),
                Movement(transactionId: "9500501", kind: "refund", amount: -495, rate: "0.30", proceeds: -346),
            ])
        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_analyst")
        let ledger = try connection.query(
            "SELECT kind, amount FROM analytics.balance_ledger WHERE user_id = 'u-prorated' ORDER BY kind")
        #expect((0..<ledger.count).map { "\(ledger[$0, 0]!) \(ledger[$0, 1]!)" } == ["purchase 100", "refund -50"])
        try eventually(
            "(try? connection.query(\"SELECT balance FROM analytics.balances WHERE user_id = 'u-prorated'\"))?.count == 1",
            within: 10
        ) {
            (try? connection.query("SELECT balance FROM analytics.balances WHERE user_id = 'u-prorated'"))?.count
                == 1
        }
        #expect(
            try connection.query("SELECT balance FROM analytics.balances WHERE user_id = 'u-prorated'")[0, 0] == "50")
    }
}
