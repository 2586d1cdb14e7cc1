import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

@Suite(.tags(.database)) struct ProjectionVersionsTests {
    @Test func projectionsReportVersionPositionAndLag() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        try AnalyticsTests.waitForAnalytics(harness)
        let response = try harness.request("GET", "/v1/admin/projections")
        #expect(response.status == 200)
        let head = try #require(response.json["head"]?.int64Value)
        let projections = try #require(response.json["projections"]?.arrayValue)
        let users = try #require(projections.first { $0["name"]?.stringValue == "users" })
        #expect(users["version"]?.int64Value == Int64(ProjectionVersions.users.version))
        #expect(users["builtVersion"]?.int64Value == Int64(ProjectionVersions.users.version))
        #expect(users["position"]?.int64Value == head)
        #expect(users["lag"]?.int64Value == 0)
        let analytics = try #require(projections.first { $0["name"]?.stringValue == "analytics" })
        #expect(analytics["mode"]?.stringValue == "async")
        #expect(analytics["lag"]?.int64Value == 0)
        #expect(analytics["position"]?.int64Value == head)

        let metrics = try String(contentsOf: URL(string: harness.app.url + "/metrics")!, encoding: .utf8)
        #expect(metrics.contains("iap_projection_lag_events{projection=\"users\"} 0"))
        #expect(metrics.contains("iap_projection_lag_events{projection=\"analytics\"} 0"))
        #expect(metrics.contains("iap_replay_running 0"))
        #expect(try harness.request("GET", "/v1/admin/projections", auth: false).status == 401)
    }

    @Test func aVersionTheDatabaseHasNotBuiltIsRebuiltBeforeServing() throws {
        let first = try TestService.scenarios()
        try first.runScenarios()
        try AnalyticsTests.waitForAnalytics(first)
        let before = try first.documents()
        let conninfo = first.conninfo
        first.stop()
        // The database was built by "older code": version 0 and documents that rule got wrong.
        let admin = try Connection(conninfo)
        try admin.executeScript(
            """
            UPDATE proj.projection_versions SET version = 0;
            UPDATE proj.users SET document = '{"stale":true}' WHERE user_id IN ('u-sub', 'u-coins');
            DELETE FROM proj.chain_owners WHERE user_id = 'u-to';
            DELETE FROM analytics.transactions;
            """)
        let restarted = try TestService.scenarios(sharing: first)
        defer { restarted.stop() }
        // Rebuilt before the server answered its first request.
        #expect(try restarted.documents() == before)
        #expect(try restarted.owners().values.contains("u-to"))
        let versions = try admin.query("SELECT name, version FROM proj.projection_versions ORDER BY name")
        // The versions this code builds (analytics, users: sorted by name).
        #expect(
            (0..<versions.count).map { versions[$0, 1]! }
                == [ProjectionVersions.analytics.version, ProjectionVersions.users.version].map(String.init))
        try AnalyticsTests.waitForAnalytics(restarted)
        #expect(try AnalyticsTests.scalar(admin, "SELECT count(*) FROM analytics.transactions") == "9")
    }
}
