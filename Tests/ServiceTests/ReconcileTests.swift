import AppStore
import Foundation
import JSON
import Testing
import TestSupport
@testable import Service

/// `POST /v1/admin/reconcile` (api.md §5, missed notifications) against the stand-in of Apple's
/// Server API, real PostgreSQL and HTTP.
@Suite struct ReconcileTests {
    static func notification(_ id: String) -> String {
        let now = TestVectors.nowMillis
        let transaction = Mint.transaction(id, product: TestService.monthly, purchase: now - hour, expires: now + 29 * day, signed: now - hour)
        return TestVectors.shared.signedNotification(type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: transaction, renewal: nil)
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
        #expect(first.json == .object(["fetched": .int(4), "recorded": .int(2), "duplicates": .int(1), "rejected": .int(1)]))
        let again = try api.post("/v1/admin/reconcile", ["since": .string(since), "environment": "Production"])
        #expect(again.json == .object(["fetched": .int(4), "recorded": .int(0), "duplicates": .int(3), "rejected": .int(1)]))
        #expect(apple.production.requests.filter { $0.path == "/inApps/v1/notifications/history" }.count >= 4, "every page")

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
        for body: JSONValue in [[:], ["since": "yesterday"], ["since": .string(RFC3339.format(now - 200 * day))],
                                ["since": .string(RFC3339.format(now - hour)), "environment": "Xcode"],
                                ["since": .string(RFC3339.format(now - hour)), "until": .string(RFC3339.format(now - 2 * hour))]] {
            let response = try api.post("/v1/admin/reconcile", body)
            #expect(response.status == 400, "\(body) \(response.text)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
        }
        #expect(apple.production.requests.isEmpty)
        #expect(try service.client("write").post("/v1/admin/reconcile", ["since": .string(RFC3339.format(now - hour))]).status == 403)
        let unkeyed = try TestService()
        defer { unkeyed.stop() }
        let refused = try unkeyed.client().post("/v1/admin/reconcile", ["since": .string(RFC3339.format(now - hour))])
        #expect(refused.status == 422)
        #expect(refused.json["code"]?.stringValue == "server_api_not_configured")
    }
}
