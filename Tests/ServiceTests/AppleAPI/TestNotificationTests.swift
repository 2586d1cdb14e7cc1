import AppStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The "is my notification URL right?" check (api.md §5): `POST /v1/admin/apple/test-notification`
/// and `GET /v1/admin/apple/test-notification/{token}` against the stand-in of Apple's Server
/// API (which checks every token as Apple does), real PostgreSQL and HTTP.
@Suite(.tags(.database)) struct TestNotificationTests {
    static let path = "/v1/admin/apple/test-notification"

    /// A TEST notification signed by the test PKI, as Apple sends one, and its notificationUUID.
    static func testNotification() throws -> (jws: String, uuid: String) {
        let jws = TestVectors.shared.signedNotification(type: "TEST", subtype: nil, transaction: nil, renewal: nil)
        var text = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(
            of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        let payload = try JSONValue.parse(Array(try #require(Data(base64Encoded: text))))
        return (jws, try #require(payload["notificationUUID"]?.stringValue))
    }

    @Test func aRecordedTestNotificationIsReportedRecordedAndOneThatNeverArrivedIsNot() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client("admin")

        // Apple is asked, with a token it accepts, and its token handed back.
        let requested = try api.post(
            Self.path, ["bundleId": .string(TestVectors.bundleId), "environment": "Production"])
        #expect(requested.status == 200, "\(requested.text)")
        let token = try #require(requested.json["testNotificationToken"]?.stringValue)
        #expect(apple.production.testNotificationTokens == [token])
        let asked = try #require(apple.production.requests.last)
        #expect(asked.method == "POST" && asked.path == "/inApps/v1/notifications/test")
        #expect(asked.status == 200, "the stand-in accepted the JWT")
        #expect(asked.authorization?.hasPrefix("Bearer ey") == true)
        #expect(requested.json["environment"]?.stringValue == "Production")
        #expect(requested.json["bundleId"]?.stringValue == TestVectors.bundleId)
        #expect(apple.sandbox.requests.isEmpty)

        // Apple delivers it to the notification URL; its status names it.
        let delivered = try Self.testNotification()
        let posted = try service.client(nil).notify(delivered.jws)
        #expect(posted.json["result"]?.stringValue == "recorded", "\(posted.text)")
        let attemptDate = TestVectors.nowMillis - 5_000
        apple.production.setTestNotificationStatus(
            token,
            TestNotificationStatus(
                signedPayload: delivered.jws,
                sendAttempts: [SendAttempt(attemptDate: attemptDate, sendAttemptResult: "SUCCESS")]))
        let status = try api.get("\(Self.path)/\(token)?environment=Production")
        #expect(status.status == 200, "\(status.text)")
        #expect(status.json["recorded"] == .bool(true))
        #expect(status.json["notificationUUID"]?.stringValue == delivered.uuid)
        #expect(
            status.json["sendAttempts"]
                == .array([
                    .object([
                        "attemptDate": .string(RFC3339.format(attemptDate)), "sendAttemptResult": "SUCCESS",
                    ])
                ]))
        #expect(apple.production.requests.last?.path == "/inApps/v1/notifications/test/\(token)")

        // A second test whose notification never reached this service.
        let second = try #require(
            try api.post(Self.path, ["environment": "Production"]).json["testNotificationToken"]?.stringValue)
        let lost = try Self.testNotification()
        apple.production.setTestNotificationStatus(
            second,
            TestNotificationStatus(
                signedPayload: lost.jws,
                sendAttempts: [SendAttempt(attemptDate: attemptDate, sendAttemptResult: "NO_RESPONSE")]))
        let missing = try api.get("\(Self.path)/\(second)?bundleId=\(TestVectors.bundleId)&environment=Production")
        #expect(missing.status == 200, "\(missing.text)")
        #expect(missing.json["recorded"] == .bool(false))
        #expect(missing.json["notificationUUID"]?.stringValue == lost.uuid)
        #expect(missing.json["sendAttempts"]?[0]?["sendAttemptResult"]?.stringValue == "NO_RESPONSE")

        // Before Apple has tried: no attempts, nothing to look up.
        let third = try #require(
            try api.post(Self.path, ["environment": "Production"]).json["testNotificationToken"]?.stringValue)
        let pending = try api.get("\(Self.path)/\(third)?environment=Production")
        #expect(pending.status == 200, "\(pending.text)")
        #expect(pending.json["sendAttempts"] == .array([]))
        #expect(pending.json["recorded"] == .bool(false))
        #expect(pending.json["notificationUUID"] == .null)
    }

    @Test func aForgedSignedPayloadIsNotTrustedAndAnUnknownTokenIsAppleRejected() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client("admin")
        let delivered = try Self.testNotification()
        #expect(try service.client(nil).notify(delivered.jws).json["result"]?.stringValue == "recorded")
        // A payload naming a recorded notification, with a broken signature: never "recorded".
        let token = try #require(
            try api.post(Self.path, ["environment": "Sandbox"]).json["testNotificationToken"]?.stringValue)
        #expect(apple.sandbox.testNotificationTokens == [token])
        var forged = delivered.jws
        forged.removeLast(4)
        forged += "AAAA"
        apple.sandbox.setTestNotificationStatus(
            token,
            TestNotificationStatus(
                signedPayload: forged,
                sendAttempts: [SendAttempt(attemptDate: TestVectors.nowMillis, sendAttemptResult: "SUCCESS")]))
        let refused = try api.get("\(Self.path)/\(token)?environment=Sandbox")
        #expect(refused.status == 502, "\(refused.text)")
        #expect(refused.json["code"]?.stringValue == "apple_unavailable")
        #expect(refused.json["detail"]?.stringValue?.contains("did not verify") == true, "\(refused.text)")

        let unknown = try api.get(
            "\(Self.path)/0b7e4ad4-0000-4000-8000-000000000000_1700000000000?environment=Production")
        #expect(unknown.status == 422, "\(unknown.text)")
        #expect(unknown.json["code"]?.stringValue == "apple_rejected")
        #expect(unknown.json["appleErrorCode"]?.int64Value == 4_040_008)
    }

    @Test func badInputIsRefusedBeforeAppleIsAskedAndOnlyAdminsMayAsk() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client("admin")
        let cases: [(body: JSONValue, status: Int, code: String, words: String)] = [
            ([:], 400, "invalid_request", "environment is required"),
            (["environment": "Xcode"], 400, "invalid_request", "environment must be Production or Sandbox"),
            (["bundleId": 7, "environment": "Production"], 400, "invalid_request", "bundleId must be a string"),
            (["bundleId": "com.other.app", "environment": "Production"], 422, "unknown_app", "com.other.app"),
        ]
        for (body, status, code, words) in cases {
            let response = try api.post(Self.path, body)
            #expect(response.status == status, "\(body) \(response.text)")
            #expect(response.json["code"]?.stringValue == code, "\(body) \(response.text)")
            #expect(response.json["detail"]?.stringValue?.contains(words) == true, "\(body) \(response.text)")
        }
        for target in [
            "bad%20token?environment=Production", "\(String(repeating: "a", count: 129))?environment=Production",
            "abc?environment=Local", "abc",
        ] {
            let response = try api.get("\(Self.path)/\(target)")
            #expect(response.status == 400, "\(target) \(response.text)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
        }
        let unknownApp = try api.get("\(Self.path)/abc?bundleId=com.other.app&environment=Production")
        #expect(unknownApp.status == 422)
        #expect(unknownApp.json["code"]?.stringValue == "unknown_app")
        #expect(apple.production.requests.isEmpty && apple.sandbox.requests.isEmpty, "nothing bad reached Apple")

        for scope in ["read", "write"] {
            #expect(try service.client(scope).post(Self.path, ["environment": "Production"]).status == 403)
            #expect(try service.client(scope).get("\(Self.path)/abc?environment=Production").status == 403)
        }
        #expect(try service.client(nil).post(Self.path, ["environment": "Production"]).status == 401)
        #expect(apple.production.requests.isEmpty)

        let unkeyed = try TestService()
        defer { unkeyed.stop() }
        let refused = try unkeyed.client().post(Self.path, ["environment": "Production"])
        #expect(refused.status == 422)
        #expect(refused.json["code"]?.stringValue == "server_api_not_configured")
    }

    /// The contract's status lookup names no environment: the service remembers which app and
    /// environment asked for each token, in the database (another instance answers it too).
    @Test func theStatusOfATokenIsAskedWhereTheTokenCameFromWithoutNamingIt() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client("admin")
        // The app accepts Production and Sandbox: the POST must name one; the GET need not.
        let requested = try api.post(Self.path, ["environment": "Sandbox"])
        #expect(requested.status == 200, "\(requested.text)")
        let token = try #require(requested.json["testNotificationToken"]?.stringValue)
        #expect(apple.sandbox.testNotificationTokens == [token])
        let delivered = try Self.testNotification()
        #expect(try service.client(nil).notify(delivered.jws).json["result"]?.stringValue == "recorded")
        let attemptDate = TestVectors.nowMillis - 1_000
        apple.sandbox.setTestNotificationStatus(
            token,
            TestNotificationStatus(
                signedPayload: delivered.jws,
                sendAttempts: [SendAttempt(attemptDate: attemptDate, sendAttemptResult: "SUCCESS")]))

        let status = try api.get("\(Self.path)/\(token)")
        #expect(status.status == 200, "\(status.text)")
        #expect(status.json["environment"]?.stringValue == "Sandbox")
        #expect(status.json["bundleId"]?.stringValue == TestVectors.bundleId)
        #expect(status.json["recorded"] == .bool(true), "\(status.text)")
        #expect(status.json["sendAttempts"]?[0]?["sendAttemptResult"]?.stringValue == "SUCCESS")
        #expect(
            apple.sandbox.requests.last?.path == "/inApps/v1/notifications/test/\(token)",
            "asked where the token came from")
        #expect(apple.production.requests.isEmpty)

        // Another instance on the same database (or this one restarted) knows it as well.
        let other = try TestService(configuration: service.app.service.configuration, sharing: service)
        defer { other.stop() }
        let elsewhere = try other.client("admin").get("\(Self.path)/\(token)")
        #expect(elsewhere.status == 200, "\(elsewhere.text)")
        #expect(elsewhere.json["environment"]?.stringValue == "Sandbox")
        #expect(elsewhere.json["recorded"] == .bool(true))
        #expect(apple.production.requests.isEmpty)

        // The old query parameter still works, and still wins when given.
        let named = try api.get("\(Self.path)/\(token)?environment=Sandbox")
        #expect(named.status == 200 && named.json["recorded"] == .bool(true), "\(named.text)")
        let elsewhereNamed = try api.get("\(Self.path)/\(token)?environment=Production")
        #expect(
            elsewhereNamed.json["appleErrorCode"]?.int64Value == 4_040_008,
            "Production never issued it: \(elsewhereNamed.text)")

        // A token this service never asked for: the environment must be named, and the answer says why.
        let foreign = try api.get("\(Self.path)/0b7e4ad4-0000-4000-8000-000000000001_1700000000000")
        #expect(foreign.status == 400, "\(foreign.text)")
        #expect(
            foreign.json["detail"]?.stringValue?.contains("no record of asking Apple for this token") == true,
            "\(foreign.text)")
    }

    /// An app that accepts one store environment needs none named, and refuses the other.
    @Test func aSandboxOnlyAppDefaultsToSandboxAndRefusesProduction() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        var configuration = TestService.configuration()
        configuration.apps[0].environments = ["Sandbox"]
        configuration.apps[0].serverAPI = Configuration.ServerAPI(
            issuerId: "issuer-test", keyId: "KEYTEST123", privateKeyPath: SyncTests.keyPath,
            key: AppStoreServerKey.testKey(),
            productionURL: apple.productionURL.absoluteString, sandboxURL: apple.sandboxURL.absoluteString)
        configuration.reconcileIntervalSeconds = 0
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let api = service.client("admin")
        let requested = try api.post(Self.path, JSONValue.object([:]))
        #expect(requested.status == 200, "\(requested.text)")
        #expect(requested.json["environment"]?.stringValue == "Sandbox")
        let token = try #require(requested.json["testNotificationToken"]?.stringValue)
        #expect(apple.sandbox.testNotificationTokens == [token])
        let status = try api.get("\(Self.path)/\(token)")
        #expect(status.status == 200, "\(status.text)")
        #expect(status.json["recorded"] == .bool(false))

        let wrong = try api.post(Self.path, ["environment": "Production"])
        #expect(wrong.status == 422, "\(wrong.text)")
        #expect(wrong.json["code"]?.stringValue == "wrong_environment")
        #expect(
            try api.get("\(Self.path)/\(token)?environment=Production").json["code"]?.stringValue == "wrong_environment"
        )
        #expect(apple.production.requests.isEmpty)
    }
}
