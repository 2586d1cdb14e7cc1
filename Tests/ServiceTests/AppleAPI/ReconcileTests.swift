import AppStore
import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import AppleAPI
@testable import Infrastructure
@testable import Service

/// `POST /v1/admin/reconcile` (api.md §5, missed notifications) against the stand-in of Apple's
/// Server API, real PostgreSQL and HTTP.
@Suite(.tags(.database)) struct ReconcileTests {
    static func notification(_ id: String) -> String {
        let now = TestVectors.nowMillis
        let transaction = Mint.transaction(
            id, product: TestService.monthly, purchase: now - hour, expires: now + 29 * day, signed: now - hour)
        return TestVectors.shared.signedNotification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: transaction, renewal: nil)
    }

    @Test func notificationsThatNeverArrivedAreRecordedOnceAndAForgedOneNever() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        apple.production.setPageSizes(notifications: 2)
        let delivered = Self.notification("5000001")
        let missed = [Self.notification("5000002"), Self.notification("5000003")]
        var forged = Self.notification("5000004")
        forged.removeLast(4)
        forged += "AAAA"
        for jws in [delivered] + missed + [forged] { apple.production.addNotification(jws) }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client()
        #expect(try api.notify(delivered).json["result"]?.stringValue == "recorded")

        let since = RFC3339.format(service.clock.now - hour)
        let first = try api.post("/v1/admin/reconcile", ["since": .string(since)])
        #expect(first.status == 200, "\(first.text)")
        #expect(
            first.json
                == .object(["fetched": .int(4), "recorded": .int(2), "duplicates": .int(1), "rejected": .int(1)]))
        let again = try api.post("/v1/admin/reconcile", ["since": .string(since), "environment": "Production"])
        #expect(
            again.json
                == .object(["fetched": .int(4), "recorded": .int(0), "duplicates": .int(3), "rejected": .int(1)]))
        #expect(
            apple.production.requests.filter { $0.path == "/inApps/v1/notifications/history" }.count >= 4, "every page")

        // The missed ones count as soon as a user claims their chains; the forged one was never kept.
        for id in ["5000002", "5000003"] {
            let chain = try api.get("/v1/subscriptions/\(id)")
            #expect(chain.status == 200, "\(id) \(chain.text)")
        }
        #expect(try api.get("/v1/subscriptions/5000004").status == 404)
    }

    @Test func badInputIsRefusedAndAServiceWithoutAKeySaysSo() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        for body: JSONValue in [
            [:], ["since": "yesterday"], ["since": .string(RFC3339.format(now - 200 * day))],
            ["since": .string(RFC3339.format(now - hour)), "environment": "Xcode"],
            ["since": .string(RFC3339.format(now - hour)), "until": .string(RFC3339.format(now - 2 * hour))],
        ] {
            let response = try api.post("/v1/admin/reconcile", body)
            #expect(response.status == 400, "\(body) \(response.text)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
        }
        #expect(apple.production.requests.isEmpty)
        #expect(
            try service.client("write").post("/v1/admin/reconcile", ["since": .string(RFC3339.format(now - hour))])
                .status == 403)
        let unkeyed = try TestService()
        defer { unkeyed.stop() }
        let refused = try unkeyed.client().post("/v1/admin/reconcile", ["since": .string(RFC3339.format(now - hour))])
        #expect(refused.status == 422)
        #expect(refused.json["code"]?.stringValue == "server_api_not_configured")
    }

    @Test func theBackgroundReconcilerRecordsWhatNeverArrivedOnceAndItsCheckpointOutlivesARestart() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        for id in ["5100001", "5100002"] { apple.production.addNotification(Self.notification(id)) }
        var configuration = TestService.configuration()
        configuration.apps[0].serverAPI = Configuration.ServerAPI(
            issuerId: "issuer-test", keyId: "KEYTEST123", privateKeyPath: SyncTests.keyPath,
            key: AppStoreServerKey.testKey(),
            productionURL: apple.productionURL.absoluteString, sandboxURL: apple.sandboxURL.absoluteString)
        configuration.reconcileIntervalSeconds = 1
        let first = try TestService(configuration: configuration)
        let connection = try Connection(first.conninfo)
        func checkpoints() throws -> (rows: Int, recorded: Int64, lastSuccess: Int64) {
            let rows = try connection.query(
                "SELECT count(*), coalesce(sum(recorded_total), 0), coalesce(max(last_success_at), 0) FROM reconcile.checkpoints"
            )
            return (Int(rows[0, 0] ?? "0") ?? 0, Int64(rows[0, 1] ?? "0") ?? 0, Int64(rows[0, 2] ?? "0") ?? 0)
        }
        try eventually("one checkpoint per store environment", within: 20) { (try? checkpoints().rows) == 2 }
        #expect(try checkpoints().recorded == 2)
        for id in ["5100001", "5100002"] { #expect(try first.client().get("/v1/subscriptions/\(id)").status == 200) }
        let before = try checkpoints().lastSuccess
        first.stop()

        // A restart resumes from the checkpoint: it runs again, finds only duplicates.
        let second = try TestService(configuration: configuration, sharing: first)
        defer { second.stop() }
        let third = try TestService(configuration: configuration, sharing: first)
        defer { third.stop() }
        try eventually("it ran again", within: 20) { ((try? checkpoints().lastSuccess) ?? 0) > before }
        #expect(try checkpoints().recorded == 2, "nothing recorded twice")
        let holders = try connection.query(
            "SELECT count(*) FROM ops.leases WHERE name = $1 AND expires_at > now()", [Reconciler.leaseName])
        #expect(holders[0, 0] == "1", "one of the two instances runs it")
        let metrics = try second.client(nil).get("/metrics").text + (try third.client(nil).get("/metrics").text)
        let held = [
            "iap_background_lease_held{job=\"reconciler\"} 1", "iap_background_lease_held{job=\"reconciler\"} 0",
        ]
        #expect(held.allSatisfy { metrics.contains($0) }, "one instance says it runs it, the other that it does not")
        #expect(metrics.contains("iap_reconcile_runs_total{"))
        #expect(metrics.contains("iap_reconcile_last_success_timestamp_seconds{"))
    }

    @Test func theReconcileConfigDefaultsToHourlyAndABadIntervalNamesTheKey() throws {
        func parse(_ text: String) throws(ConfigurationError) -> Configuration {
            try Configuration.parse(Array(text.utf8), file: "/etc/iap/config.json", baseDirectory: "/nonexistent")
        }
        #expect(try parse("{}").reconcileIntervalSeconds == 3600)
        #expect(try parse(#"{"reconcile": {"intervalSeconds": 0}}"#).reconcileIntervalSeconds == 0)
        #expect(try parse(#"{"reconcile": {"intervalSeconds": 900}}"#).reconcileIntervalSeconds == 900)
        for (text, key) in [
            (#"{"reconcile": {"intervalSeconds": 5}}"#, "reconcile.intervalSeconds"),
            (#"{"reconcile": {"intervalSeconds": "hourly"}}"#, "reconcile.intervalSeconds"),
            (#"{"reconcile": {"every": 60}}"#, "reconcile"),
            (#"{"reconcile": 3600}"#, "reconcile"),
        ] {
            do {
                _ = try parse(text)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.description.contains(key), "\(text): \(error.description)")
                #expect(error.description.contains("/etc/iap/config.json"))
            }
        }
    }
}
