import AppStore
import Foundation
import Glibc
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service
@testable import TestStore

/// Sync and reconcile on the test store, every piece a real process: `testkit init` writes the
/// store's own In-App Purchase key and a `serverAPI` pointing at `testkit apple`, which answers
/// Apple's Server API (LocalTesting) from the store's state; `testkit purchase|notify
/// --apple-only` make "Apple" know what the service never got.
@Suite(.serialized, .tags(.database, .slow)) struct TestkitAppleTests {
    /// The store, `testkit apple` on the port init wrote, and `serve` once its background
    /// reconciler's first run (at start-up) asked the stand-in and succeeded.
    final class World {
        let root: String
        let data: String
        let port: Int
        let apple: OpsChild
        let serve: OpsServe
        let api: ServiceHTTPClient

        init() throws {
            root = try OpsBinary.temporaryDirectory()
            // The free ports are released before the stand-in and serve bind them, and the
            // suite's own client connections take ephemeral ports: one may take them in between.
            // Then start over on other ports, in a fresh data directory.
            var attempt = 0
            while true {
                attempt += 1
                let data = root + "/data-\(attempt)"
                // serve's port is chosen first: "Apple" sends notifications there (--url).
                let servePort = try FreePorts.consecutive(span: 2)
                let port = servePort + 1
                let initialised = try OpsBinary.run([
                    "testkit", "init", "--data-dir", data, "--apple-port", String(port),
                ])
                guard initialised.status == 0 else { throw OpsFailure("testkit init: \(initialised.stderr)") }
                // No --port: it listens where init pointed the config.
                let apple = try OpsChild(
                    ["testkit", "apple", "--data-dir", data, "--url", "http://127.0.0.1:\(servePort)"],
                    environment: OpsBinary.environment([:]))
                let line = "App Store Server API (LocalTesting) at http://127.0.0.1:\(port)"
                _ = try? eventually("testkit apple to listen", within: 30) { [apple] in
                    apple.stdout.contains(line) || !apple.isRunning
                }
                guard apple.stdout.contains(line), apple.isRunning else {
                    apple.kill(SIGKILL)
                    guard attempt < 3, apple.stderr.contains("already in use") else {
                        throw OpsFailure("testkit apple did not come up: \(apple.stdout) \(apple.stderr)")
                    }
                    continue
                }
                let started: OpsServe
                do {
                    started = try OpsServe(
                        ["--port", String(servePort), "--config", data + "/testkit/config.json", "--data-dir", data])
                } catch {
                    apple.kill(SIGKILL)
                    guard attempt < 3 else { throw error }
                    continue
                }
                (self.data, self.port, self.apple, self.serve) = (data, port, apple, started)
                break
            }
            let created = try OpsBinary.run([
                "keys", "create", "--name", "t", "--scopes", "read,write,admin", "--data-dir", data,
            ])
            api = ServiceHTTPClient(
                port: serve.port, apiKey: created.stdout.split(separator: "\n").last.map(String.init))
            let ran =
                #"iap_reconcile_runs_total{bundle_id="com.example.game",environment="LocalTesting",result="ok"} 1"#
            let serve = serve
            try eventually("the background reconciler to ask LocalTesting: \(serve.stderr)", within: 60) {
                (try? OpsHTTP.get(port: serve.port, "/metrics").body.contains(ran)) == true
            }
        }

        var environment: [String: String] { ["IAP_LEDGER_URL": serve.url, "IAP_LEDGER_KEY": api.apiKey ?? ""] }

        func testkit(_ arguments: [String]) throws -> OpsBinary.Outcome {
            try OpsBinary.run(["testkit"] + arguments + ["--data-dir", data], environment: environment)
        }

        func stop() {
            _ = serve.stop()
            apple.kill(SIGTERM)
            #expect(apple.wait(timeout: 30) == 0, "the stand-in stops on SIGTERM: \(apple.stderr)")
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    @Test func syncImportsAPurchaseOnlyAppleKnewAndASecondSyncRecordsNothing() throws {
        let world = try World()
        defer { world.stop() }
        let config = try Configuration.load(path: world.data + "/testkit/config.json")
        let serverAPI = try #require(config.apps.first?.serverAPI)
        #expect(serverAPI.localTestingURL == "http://127.0.0.1:\(world.port)")
        #expect(serverAPI.searchOrder == [.localTesting], "a local-testing app never asks Apple's hosts")

        let bought = try world.testkit([
            "purchase", "--user", "u-1", "--product", TestkitStore.removeAds, "--apple-only",
        ])
        #expect(bought.status == 0, "\(bought.stderr)")
        #expect(bought.stdout == "2000000001\n")
        #expect(bought.stderr.contains("not posted"))
        let before = try world.api.get("/v1/users/u-1")
        #expect(before.json["entitlements"]?["no_ads"] == nil, "the service never got it: \(before.text)")

        let synced = try world.api.post("/v1/users/u-1/sync", ["transactionId": "2000000001"])
        #expect(synced.status == 200, "\(synced.text)")
        #expect(synced.json["environment"]?.stringValue == "LocalTesting")
        #expect(
            synced.json["transactions"]?.arrayValue?.map { $0["result"]?.stringValue } == ["recorded"], "\(synced.text)"
        )
        let after = try world.api.get("/v1/users/u-1")
        #expect(after.json["entitlements"]?["no_ads"]?["active"]?.boolValue == true, "\(after.text)")

        // Apple signs every answer anew: equal but for signedDate is a duplicate.
        let again = try world.api.post("/v1/users/u-1/sync", ["transactionId": "2000000001"])
        #expect(
            again.json["transactions"]?.arrayValue?.map { $0["result"]?.stringValue } == ["duplicate"], "\(again.text)")
        #expect(try world.api.get("/v1/users/u-1").json["version"] == after.json["version"])

        // Another user's chain is not in u-1's history; an id Apple never minted is Apple's 4040010.
        #expect(
            try world.testkit(["purchase", "--user", "u-2", "--product", TestkitStore.coins, "--apple-only"]).status
                == 0)
        let mine = try world.api.post("/v1/users/u-1/sync", ["transactionId": "2000000001"])
        #expect(
            mine.json["transactions"]?.arrayValue?.compactMap { $0["transactionId"]?.stringValue } == ["2000000001"])
        let unknown = try world.api.post("/v1/users/u-1/sync", ["transactionId": "2999999999"])
        #expect(unknown.status == 422, "\(unknown.text)")
        #expect(unknown.json["appleErrorCode"]?.int64Value == 4_040_010, "\(unknown.text)")
    }

    /// Every minted transaction has an order ID (`testkit orders`), and `testkit apple` answers
    /// Look Up Order ID for it: support's lookup by the e-mail receipt's order ID works here too.
    @Test func anOrderIdTheTestStoreListsIsLookedUpAndRecorded() throws {
        let world = try World()
        defer { world.stop() }
        let bought = try world.testkit(["purchase", "--user", "u-o", "--product", TestkitStore.coins, "--apple-only"])
        #expect(bought.status == 0, "\(bought.stderr)")
        #expect(bought.stderr.contains("order ID MT00X2QXVL"), "2000000001 in base 36: \(bought.stderr)")
        #expect(
            try world.testkit(["purchase", "--user", "u-other", "--product", TestkitStore.coins, "--apple-only"]).status
                == 0)
        let listed = try world.testkit(["orders", "--user", "u-o"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(
            listed.stdout == "orderId\ttransactionId\toriginalTransactionId\tproductId\tuser\n"
                + "MT00X2QXVL\t2000000001\t2000000001\t\(TestkitStore.coins)\tu-o\n", "\(listed.stdout)")

        let found = try world.api.get("/v1/lookup?orderId=MT00X2QXVL")
        #expect(found.status == 200, "\(found.text)")
        #expect(found.json["environment"]?.stringValue == "LocalTesting")
        #expect(found.json["originalTransactionId"]?.stringValue == "2000000001")
        #expect(found.json["userId"] == .null, "recorded for nobody: the app never posted it")
        #expect(found.json["transactions"]?[0]?["recorded"]?.boolValue == true, "\(found.text)")
        #expect(try world.api.get("/v1/lookup?transactionId=2000000001").status == 200, "recorded")
        let unknown = try world.api.get("/v1/lookup?orderId=MT99999999")
        #expect(unknown.status == 404, "\(unknown.text)")
    }

    @Test func reconcileRecordsANotificationOnlyAppleSentOnceAndTheStandInChecksTokens() throws {
        let world = try World()
        defer { world.stop() }
        let bought = try world.testkit(["purchase", "--user", "u-1", "--product", TestkitStore.subscription])
        #expect(bought.status == 0, "\(bought.stderr)")
        let renewed = try world.testkit(
            ["notify", "--type", "DID_RENEW", "--original-transaction-id", "2000000001", "--apple-only"])
        #expect(renewed.status == 0, "\(renewed.stderr)")
        let state = try TestkitStore(dataDirectory: world.data).loadState()
        #expect(state.notifications.count == 1)
        let newPeriod = try #require(state.transactions.last?["expiresDate"]?.int64Value)
        let user = try world.api.get("/v1/users/u-1")
        #expect(user.json["entitlements"]?["pro"]?["expiresAt"]?.stringValue != RFC3339.format(newPeriod))

        let since = RFC3339.format(TestkitCommand.nowMillis() - 3_600_000)
        let first = try world.api.post("/v1/admin/reconcile", ["since": .string(since)])
        #expect(first.status == 200, "\(first.text)")
        #expect(Self.counts(first) == [1, 1, 0, 0], "\(first.text)")
        let renewedUser = try world.api.get("/v1/users/u-1")
        #expect(
            renewedUser.json["entitlements"]?["pro"]?["expiresAt"]?.stringValue == RFC3339.format(newPeriod),
            "\(renewedUser.text)")
        // Asked again (and by environment): what it found is now a duplicate.
        let second = try world.api.post(
            "/v1/admin/reconcile", ["since": .string(since), "environment": "LocalTesting"])
        #expect(Self.counts(second) == [1, 0, 1, 0], "\(second.text)")
        #expect(try world.api.get("/v1/users/u-1").json["version"] == renewedUser.json["version"])
        // A posted notification is in Apple's history too: a duplicate, never recorded twice.
        #expect(
            try world.testkit(["notify", "--type", "REFUND", "--original-transaction-id", "2000000001"]).status == 0)
        let third = try world.api.post("/v1/admin/reconcile", ["since": .string(since)])
        #expect(Self.counts(third) == [2, 0, 2, 0], "\(third.text)")

        // The stand-in answers the store's key only, as Apple does (401, empty body), and signs
        // its answer at the moment it answers.
        let key = try #require(Configuration.load(path: world.data + "/testkit/config.json").apps.first?.serverAPI?.key)
        let path = "/inApps/v1/transactions/2000000002"  // the renewal the REFUND revoked
        let other = try AppStoreServerKey(
            issuerId: key.issuerId, keyId: key.keyId, privateKeyPEM: TestCertificateAuthority.generateKeyPEM())
        for authorization in [
            "", "Bearer x.y.z",
            "Bearer "
                + AppStoreServerToken(key: other, bundleId: TestkitStore.bundleId).token(
                    nowMillis: TestkitCommand.nowMillis()),
            "Bearer "
                + AppStoreServerToken(key: key, bundleId: "com.example.other").token(
                    nowMillis: TestkitCommand.nowMillis()),
        ] {
            let refused = try OpsHTTP.get(
                port: world.port, path, headers: authorization.isEmpty ? [:] : ["Authorization": authorization])
            #expect(
                refused.status == 401 && refused.body.isEmpty,
                "\(authorization.prefix(20)): \(refused.status) \(refused.body)")
        }
        let asked = TestkitCommand.nowMillis()
        let token = AppStoreServerToken(key: key, bundleId: TestkitStore.bundleId).token(nowMillis: asked)
        let answer = try OpsHTTP.get(port: world.port, path, headers: ["Authorization": "Bearer " + token])
        #expect(answer.status == 200, "\(answer.body)")
        let signed = try #require(JSONValue.parse(Array(answer.body.utf8))["signedTransactionInfo"]?.stringValue)
        let payload = try #require(Self.payload(signed))
        #expect((payload["signedDate"]?.int64Value ?? 0) >= asked - 1000, "signed as it answered: \(payload)")
        #expect(payload["revocationDate"] != nil, "the refund `testkit notify` minted is what Apple now answers")
    }

    /// The test store plays Apple for Extend a Subscription Renewal Date and for the test
    /// notification (api.md §5), every piece a real process: the expiry moves by the days
    /// asked, and the TEST notification reaches serve's notification endpoint.
    @Test func extendMovesTheExpiryByTheDaysAskedAndATestNotificationArrivesAndIsReportedRecorded() throws {
        let world = try World()
        defer { world.stop() }
        let bought = try world.testkit(["purchase", "--user", "u-1", "--product", TestkitStore.subscription])
        #expect(bought.status == 0, "\(bought.stderr)")
        let chain = "2000000001"
        let before = try world.api.get("/v1/users/u-1")
        let previous = try #require(
            before.json["entitlements"]?["pro"]?["expiresAt"]?.stringValue.flatMap(RFC3339.parse),
            "\(before.text)")

        let days: Int64 = 9
        let extended = try world.api.post(
            "/v1/subscriptions/\(chain)/extend", ["days": .int(days), "reason": .int(1), "requestId": "goodwill-1"])
        #expect(extended.status == 200, "\(extended.text)")
        #expect(
            extended.json["success"]?.boolValue == true && extended.json["refreshed"]?.boolValue == true,
            "\(extended.text)")
        #expect(extended.json["environment"]?.stringValue == "LocalTesting")
        let expected = previous + days * 86_400_000
        #expect(
            extended.json["effectiveDate"]?.stringValue == RFC3339.format(expected),
            "Apple's new renewal date: \(extended.text)")
        let after = try world.api.get("/v1/users/u-1")
        #expect(
            after.json["entitlements"]?["pro"]?["expiresAt"]?.stringValue == RFC3339.format(expected), "\(after.text)")
        #expect(after.json["subscriptions"]?[0]?["expiresAt"]?.stringValue == RFC3339.format(expected), "\(after.text)")

        // Apple's request identifier makes it idempotent: asked again, nothing moves twice.
        let again = try world.api.post(
            "/v1/subscriptions/\(chain)/extend", ["days": .int(days), "reason": .int(1), "requestId": "goodwill-1"])
        #expect(again.status == 200, "\(again.text)")
        #expect(again.json["effectiveDate"]?.stringValue == RFC3339.format(expected), "\(again.text)")
        #expect(
            try world.api.get("/v1/users/u-1").json["entitlements"]?["pro"]?["expiresAt"]?.stringValue
                == RFC3339.format(expected))
        // The test store's state holds the extended period, and Apple's RENEWAL_EXTENDED.
        let state = try TestkitStore(dataDirectory: world.data).loadState()
        #expect(state.transactions.last?["expiresDate"]?.int64Value == expected)
        #expect(state.renewals[chain]?["renewalDate"]?.int64Value == expected)
        let kinds = state.notifications.compactMap { Self.payload($0)?["notificationType"]?.stringValue }
        #expect(kinds == ["RENEWAL_EXTENDED"], "\(kinds)")

        // The test notification: no bundleId nor environment (one app, LocalTesting only).
        let requested = try world.api.post("/v1/admin/apple/test-notification", JSONValue.object([:]))
        #expect(requested.status == 200, "\(requested.text)")
        #expect(requested.json["environment"]?.stringValue == "LocalTesting")
        let token = try #require(requested.json["testNotificationToken"]?.stringValue)
        var status: ServiceHTTPClient.Response?
        try eventually("never recorded: \(status?.text ?? "no answer") \(world.apple.stderr)", within: 30) {
            status = try? world.api.get("/v1/admin/apple/test-notification/\(token)")
            return status?.json["recorded"] == .bool(true) && status?.json["sendAttempts"]?.arrayValue?.isEmpty == false
        }
        let report = try #require(status)
        #expect(report.status == 200, "\(report.text)")
        let attempts = report.json["sendAttempts"]?.arrayValue ?? []
        #expect(attempts.contains { $0["sendAttemptResult"]?.stringValue == "SUCCESS" }, "\(report.text)")
        #expect(attempts.allSatisfy { $0["attemptDate"]?.stringValue.flatMap(RFC3339.parse) != nil }, "\(report.text)")
        let uuid = try #require(report.json["notificationUUID"]?.stringValue)
        let apple = world.apple
        try eventually("\(apple.stderr)", within: 10) {
            apple.stderr.contains(
                "sent TEST (token \(token)) to \(world.serve.url)/v1/notifications/apple: SUCCESS")
        }
        // It came through the real endpoint: the log holds it as a notification like any other.
        let metrics = try OpsHTTP.get(port: world.serve.port, "/metrics").body
        #expect(metrics.contains(#"iap_notifications_total{type="TEST",subtype=""} 1"#), "\(uuid): \(metrics)")
    }

    /// fetched, recorded, duplicates, rejected.
    static func counts(_ response: ServiceHTTPClient.Response) -> [Int64?] {
        ["fetched", "recorded", "duplicates", "rejected"].map { response.json[$0]?.int64Value }
    }

    /// The payload of a compact JWS, unverified.
    static func payload(_ jws: String) -> JSONValue? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text).flatMap { try? JSONValue.parse(Array($0)) }
    }

    /// A store made before `testkit apple` served the Server API keeps loading.
    @Test func aStateWithoutTheNewFieldsLoads() throws {
        let old = try JSONValue.parse(
            Array(#"{"nextId": 2000000002, "transactions": [{"transactionId": "2000000001"}], "renewals": {}}"#.utf8))
        let state = try #require(TestkitState(json: old))
        #expect(state.transactions.count == 1 && state.customers.isEmpty && state.notifications.isEmpty)
        var next = state
        next.customers["2000000001"] = "u-1"
        next.notifications = ["a.b.c"]
        #expect(TestkitState(json: next.json()) == next)
        #expect(
            TestkitState(
                json: try JSONValue.parse(
                    Array(#"{"nextId": 1, "transactions": [], "renewals": {}, "notifications": [1]}"#.utf8))) == nil)
    }
}
