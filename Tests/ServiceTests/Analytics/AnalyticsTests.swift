import EventStore
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

@Suite(.tags(.database)) struct AnalyticsTests {
    /// Waits for the background projector to reach the log head.
    static func waitForAnalytics(_ harness: TestService) throws {
        let connection = try harness.connection()
        // A pending rebuild stands at the start of the log: its lag is the whole log.
        try eventually("the analytics projector to reach the log head", within: 20) {
            try ProjectionLag.lag(after: AnalyticsProjector.position(on: connection), on: connection) == 0
        }
    }

    static func scalar(_ connection: Connection, _ sql: String, _ params: [String?] = []) throws -> String? {
        let rows = try connection.query(sql, params)
        return rows.isEmpty ? nil : rows[0, 0]
    }

    @Test func analyticsTablesFollowTheLog() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        try Self.waitForAnalytics(harness)
        let c = try harness.connection()
        try c.executeScript("SET ROLE iap_analyst")

        #expect(try Self.scalar(c, "SELECT count(*) FROM analytics.transactions") == "9")
        #expect(
            try Self.scalar(c, "SELECT count(*) FROM analytics.transactions WHERE revocation_date IS NOT NULL") == "2")
        #expect(try Self.scalar(c, "SELECT count(*) FROM analytics.notifications") == "2")
        #expect(try Self.scalar(c, "SELECT count(*) FROM analytics.products") == "3")

        let sub = try c.query(
            "SELECT status, periods, auto_renew FROM analytics.subscriptions WHERE user_id = 'u-sub'")
        #expect(sub.count == 1)
        #expect(sub[0, "status"] == "active")
        #expect(sub[0, "periods"] == "3")  // two purchases and the DID_RENEW period
        #expect(sub.bool(0, "auto_renew") == false)
        #expect(
            try Self.scalar(c, "SELECT status FROM analytics.subscriptions WHERE user_id = 'u-expired'") == "expired")
        #expect(try Self.scalar(c, "SELECT count(*) FROM analytics.subscriptions WHERE user_id = 'u-from'") == "0")
        #expect(try Self.scalar(c, "SELECT count(*) FROM analytics.subscriptions WHERE user_id = 'u-to'") == "1")

        #expect(
            try Self.scalar(
                c, "SELECT active FROM analytics.entitlements WHERE user_id = 'u-sub' AND entitlement = 'pro'") == "t")
        #expect(
            try Self.scalar(
                c, "SELECT active FROM analytics.entitlements WHERE user_id = 'u-expired' AND entitlement = 'pro'")
                == "f")
        #expect(
            try Self.scalar(
                c, "SELECT active FROM analytics.entitlements WHERE user_id = 'u-ads' AND entitlement = 'no_ads'")
                == "t")
        #expect(
            try Self.scalar(
                c, "SELECT active FROM analytics.entitlements WHERE user_id = 'u-ads-refund' AND entitlement = 'no_ads'"
            ) == "f")

        #expect(
            try Self.scalar(
                c, "SELECT balance FROM analytics.balances WHERE user_id = 'u-coins' AND currency = 'coins'") == "20")
        #expect(
            try Self.scalar(
                c, "SELECT sum(amount) FROM analytics.balance_ledger WHERE user_id = 'u-coins' AND currency = 'coins'")
                == "20")
        #expect(try Self.scalar(c, "SELECT count(*) FROM analytics.balance_ledger WHERE user_id = 'u-coins'") == "5")

        #expect(try Self.scalar(c, "SELECT sum(new_subscriptions) FROM analytics.daily_metrics") == "3")
        #expect(try Self.scalar(c, "SELECT sum(renewals) FROM analytics.daily_metrics") == "2")
        #expect(try Self.scalar(c, "SELECT sum(refunds) FROM analytics.daily_metrics") == "2")
        #expect(
            try Self.scalar(c, "SELECT active_subscriptions FROM analytics.daily_metrics ORDER BY day DESC LIMIT 1")
                != "0")
        #expect(
            try Self.scalar(c, "SELECT count(*) FROM analytics.daily_metrics WHERE revenue_milli_by_currency ? 'USD'")
                != "0")
        #expect(
            try Self.scalar(c, "SELECT sum(gross_milli) FROM analytics.daily_revenue WHERE currency = 'USD'")
                == String(9 * 9990))
    }

    @Test func analystReadsAnalyticsAndNothingElse() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        try Self.waitForAnalytics(harness)
        let c = try harness.connection()
        try c.executeScript("SET ROLE iap_analyst")
        for view in [
            "transactions", "subscriptions", "entitlements", "balances", "balance_ledger", "notifications",
            "daily_metrics", "daily_revenue", "renewal_infos", "chain_owners", "balance_movements", "products",
        ] {
            #expect(throws: Never.self) { _ = try c.query("SELECT * FROM analytics.\(view) LIMIT 1") }
        }
        let refused = [
            "SELECT * FROM es.events LIMIT 1", "SELECT * FROM es.streams LIMIT 1", "SELECT * FROM proj.users LIMIT 1",
            "SELECT * FROM proj.chain_owners LIMIT 1", "SELECT * FROM auth.api_keys LIMIT 1",
            "INSERT INTO analytics.products (product_id, type, entitlements, grants) VALUES ('x', 'consumable', '{}', '{}')",
            "UPDATE analytics.transactions SET price_milli = 0", "DELETE FROM analytics.notifications",
            "TRUNCATE analytics.transactions", "SELECT analytics.catch_up(10)", "CREATE TABLE analytics.mine (x int)",
            "CREATE TABLE public.mine (x int)",
        ]
        for sql in refused {
            let error = #expect(throws: DatabaseError.self, "\(sql)") { _ = try c.query(sql) }
            #expect(error?.sqlState == "42501", "\(sql): \(String(describing: error))")
        }
        let login = try Self.scalar(c, "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'iap_analyst'")
        #expect(login == "f")
    }

    @Test func columnsAreDocumentedInTheDatabaseAndTheMarkdown() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        let c = try harness.connection()
        let undocumented = try c.query(
            """
            SELECT c.relname || '.' || a.attname AS name FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'analytics' AND c.relkind IN ('r', 'v') AND a.attnum > 0 AND NOT a.attisdropped
              AND col_description(c.oid, a.attnum) IS NULL
            """)
        #expect(undocumented.count == 0, "\((0..<undocumented.count).map { undocumented[$0, 0]! })")
        let markdown = try String(
            contentsOfFile: TestVectors.repoRoot.appendingPathComponent("docs/analytics.md").path, encoding: .utf8)
        let relations = try c.query(
            """
            SELECT c.relname, a.attname FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'analytics' AND c.relkind IN ('r', 'v') AND a.attnum > 0 AND NOT a.attisdropped
            """)
        for row in 0..<relations.count {
            #expect(
                markdown.contains("analytics.\(relations[row, 0]!)"), "docs/analytics.md names \(relations[row, 0]!)")
            #expect(
                markdown.contains("`\(relations[row, 1]!)`"),
                "docs/analytics.md documents \(relations[row, 0]!).\(relations[row, 1]!)")
        }
    }

    /// Issue 11, seen 11: a replay that included analytics emptied it and let the background
    /// projector refill it, so an analyst's query in between saw nothing. Now the projector
    /// rebuilds it in one transaction beside the old rows.
    @Test func aReplayRebuildsAnalyticsSideBySideAndAnalystsNeverSeeItEmpty() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        try Self.waitForAnalytics(harness)
        let reader = try harness.connection()
        try reader.executeScript("SET ROLE iap_analyst")
        let count = "SELECT count(*) FROM analytics.transactions"
        // Each rebuilt row is written anew: its xmin tells the rebuild happened.
        let versions = "SELECT string_agg(xmin::text, ',' ORDER BY transaction_id) FROM analytics.transactions"
        #expect(try Self.scalar(reader, count) == "9")

        let seen = Mutex<Set<String>>([])
        let stop = Atomic<Bool>(false)
        let watcher = Thread {
            guard let connection = try? harness.connection() else { return }
            try? connection.executeScript("SET ROLE iap_analyst")
            while !stop.load(ordering: .relaxed) {
                if let value = try? Self.scalar(connection, count) { seen.withLock { _ = $0.insert(value) } }
            }
        }
        watcher.start()
        for _ in 0..<3 {
            let before = try Self.scalar(reader, versions)
            let report = try harness.request(
                "POST", "/v1/admin/replay", .object(["projections": .array(["analytics"])]))
            #expect(report.status == 200, "\(report.json)")
            try Self.waitForAnalytics(harness)
            #expect(try Self.scalar(reader, versions) != before, "the rows were rebuilt")
            #expect(try Self.scalar(reader, count) == "9")
        }
        stop.store(true, ordering: .relaxed)
        try eventually("the watcher to stop", within: 10) { watcher.isFinished }
        #expect(seen.withLock { $0 } == ["9"])
    }
}
