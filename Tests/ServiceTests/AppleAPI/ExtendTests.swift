import AppStore
import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `POST /v1/subscriptions/{originalTransactionId}/extend` (api.md §5) against the stand-in of
/// Apple's Server API, real PostgreSQL and HTTP.
@Suite(.tags(.database)) struct ExtendTests {
    static func monthly(_ id: String, expires: Int64, signed: Int64) -> [String: JSONValue] {
        let now = TestVectors.nowMillis
        return Mint.transaction(id, product: TestService.monthly, purchase: now - day, expires: expires, signed: signed)
    }

    static func extensions(_ service: TestService) throws -> [JSONValue] {
        let connection = try Connection(service.conninfo)
        let rows = try connection.query(
            "SELECT data::text, metadata->>'requestId' FROM es.events WHERE type = 'RenewalExtensionRequested' ORDER BY seq"
        )
        return try (0..<rows.count).map { try JSONValue.parse(Array(rows[$0, 0]!.utf8)) }
    }

    @Test func anExtensionIsAskedInTheChainsEnvironmentRecordedAndTheNewExpiryCountsAtOnce() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        let original = Mint.signed(Self.monthly("7000001", expires: now + 29 * day, signed: now - day))
        apple.sandbox.addTransaction(original)
        #expect(try api.purchase("u-1", original).status == 200)
        // What Apple holds once it extended the period by a week (the stand-in never re-signs by itself).
        apple.sandbox.addTransaction(Mint.signed(Self.monthly("7000001", expires: now + 36 * day, signed: now)))

        let response = try api.post(
            "/v1/subscriptions/7000001/extend", ["days": .int(7), "reason": .int(3), "requestId": "outage-2026-12-01"])
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["success"]?.boolValue == true)
        #expect(response.json["outcome"]?.stringValue == "accepted")
        #expect(response.json["environment"]?.stringValue == "Sandbox")
        #expect(response.json["refreshed"]?.boolValue == true)
        #expect(response.json["effectiveDate"]?.stringValue.flatMap(RFC3339.parse) != nil, "Apple's new renewal date")
        // The answer carries the owner's document with the new expiry (29 days + the 7 asked).
        #expect(response.json["customer"]?["userId"]?.stringValue == "u-1")
        #expect(
            response.json["customer"]?["entitlements"]?["pro"]?["expiresAt"]?.stringValue
                == RFC3339.format(now + (29 + 7) * day), "\(response.text)")
        let sent = try #require(apple.sandbox.requests.first { $0.method == "PUT" })
        #expect(sent.path == "/inApps/v1/subscriptions/extend/7000001")
        #expect(
            try JSONValue.parse(sent.body)
                == .object([
                    "extendByDays": .int(7), "extendReasonCode": .int(3), "requestIdentifier": "outage-2026-12-01",
                ]))
        #expect(apple.production.requests.isEmpty, "asked where the chain lives")

        let records = try Self.extensions(service)
        #expect(records.count == 1)
        #expect(records.first?["outcome"]?.stringValue == "accepted")
        #expect(records.first?["extendByDays"]?.int64Value == 7)
        #expect(records.first?["requestIdentifier"]?.stringValue == "outage-2026-12-01")
        let user = try api.user("u-1")
        #expect(user["entitlements"]?["pro"]?["expiresAt"]?.stringValue == RFC3339.format(now + 36 * day), "\(user)")

        // The log with the new event still replays, and to the same state.
        let replay = try api.post("/v1/admin/replay", ["dryRun": .bool(true)])
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUserCount"]?.int64Value == 0)
    }

    @Test func applesRefusalsAndAnUnreachableAppleAreRecordedAndAnswered() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        let original = Mint.signed(Self.monthly("7000002", expires: now + 29 * day, signed: now - day))
        apple.sandbox.addTransaction(original)
        #expect(try api.purchase("u-2", original).status == 200)

        apple.sandbox.enqueue([
            .raw(
                status: 400,
                body:
                    #"{"errorCode": 4030004, "errorMessage": "Subscription extensions are not allowed for this subscription."}"#
            )
        ])
        let refused = try api.post("/v1/subscriptions/7000002/extend", ["days": .int(7), "requestId": "r-1"])
        #expect(refused.status == 422, "\(refused.text)")
        #expect(refused.json["code"]?.stringValue == "apple_rejected")
        #expect(refused.json["appleErrorCode"]?.int64Value == 4_030_004)

        apple.sandbox.enqueue(Array(repeating: .serverError(status: 503), count: 4))
        let down = try api.post("/v1/subscriptions/7000002/extend", ["days": .int(7), "requestId": "r-2"])
        #expect(down.status == 502, "\(down.text)")
        #expect(down.json["code"]?.stringValue == "apple_unavailable")

        let records = try Self.extensions(service)
        #expect(records.map { $0["outcome"]?.stringValue } == ["rejected", "unavailable"])
        #expect(records.first?["appleErrorCode"]?.int64Value == 4_030_004)
        #expect(
            try api.user("u-2")["entitlements"]?["pro"]?["expiresAt"]?.stringValue == RFC3339.format(now + 29 * day))
        // Nothing was refreshed after these two, yet the owner's stored document counts both
        // events (its version is the last of its chains'), as a replay renders it.
        let replay = try api.post("/v1/admin/replay", ["dryRun": .bool(true)])
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
    }

    @Test func badRequestsNeverReachApple() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        #expect(
            try api.purchase("u-3", Mint.signed(Self.monthly("7000003", expires: now + day, signed: now))).status == 200
        )
        let coins = Mint.signed(
            Mint.transaction(
                "7000004", product: TestService.coins, type: "Consumable", purchase: now, expires: nil, signed: now))
        #expect(try api.purchase("u-3", coins).status == 200)
        for body: JSONValue in [
            [:], ["days": .int(0), "requestId": "r"], ["days": .int(91), "requestId": "r"],
            ["days": "7", "requestId": "r"], ["days": .number("7.5"), "requestId": "r"],
            ["days": .int(7), "reason": .int(4), "requestId": "r"], ["days": .int(7)],
            ["days": .int(7), "requestId": ""],
            ["days": .int(7), "requestId": .string(String(repeating: "x", count: 129))],
            ["days": .int(7), "requestId": "r", "note": "x"],
        ] {
            let response = try api.post("/v1/subscriptions/7000003/extend", body)
            #expect(response.status == 400, "\(body) \(response.text)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
        }
        let valid: JSONValue = ["days": .int(7), "requestId": "r"]
        #expect(try api.post("/v1/subscriptions/9999999/extend", valid).status == 404)
        let consumable = try api.post("/v1/subscriptions/7000004/extend", valid)
        #expect(consumable.status == 422)
        #expect(consumable.json["code"]?.stringValue == "not_auto_renewable")
        #expect(try api.post("/v1/subscriptions/7000.003/extend", valid).status == 400)
        #expect(try service.client("write").post("/v1/subscriptions/7000003/extend", valid).status == 403)
        #expect(apple.sandbox.requests.isEmpty && apple.production.requests.isEmpty)
        #expect(try Self.extensions(service).isEmpty)

        let unkeyed = try TestService()
        defer { unkeyed.stop() }
        #expect(
            try unkeyed.client().purchase("u-3", Mint.signed(Self.monthly("7000005", expires: now + day, signed: now)))
                .status == 200)
        let refused = try unkeyed.client().post("/v1/subscriptions/7000005/extend", valid)
        #expect(refused.status == 422)
        #expect(refused.json["code"]?.stringValue == "server_api_not_configured")
    }
}
