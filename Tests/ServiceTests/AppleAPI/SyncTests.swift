import AppStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `POST /v1/users/{userId}/sync` (api.md §5) against the stand-in of Apple's Server API (which
/// checks every token as Apple does), real PostgreSQL and HTTP.
@Suite(.tags(.database)) struct SyncTests {
    static let keyPath = TestVectors.fixtures.appendingPathComponent("test-pki/testSigningKey.p8").path

    static func service(production: String, sandbox: String) throws -> TestService {
        var configuration = TestService.configuration()
        configuration.apps[0].serverAPI = Configuration.ServerAPI(
            issuerId: "issuer-test", keyId: "KEYTEST123", privateKeyPath: keyPath, key: AppStoreServerKey.testKey(),
            productionURL: production, sandboxURL: sandbox)
        configuration.reconcileIntervalSeconds = 0  // no background reconciler asking Apple meanwhile
        return try TestService(configuration: configuration)
    }

    static func service(_ apple: AppleServerAPIStandIn) throws -> TestService {
        try service(production: apple.productionURL.absoluteString, sandbox: apple.sandboxURL.absoluteString)
    }

    static func coins(_ environment: String, customer: String = "customer-1") -> String {
        TestVectors.shared.signedTransaction([
            "productId": .string(TestService.coins), "type": "Consumable", "expiresDate": .null,
            "environment": .string(environment), "appTransactionId": .string(customer),
        ])
    }

    /// The transactionId inside a signed transaction (its payload segment, base64url JSON).
    static func transactionId(_ jws: String) throws -> String {
        let segments = jws.split(separator: ".")
        var text = String(segments[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        let payload = try JSONValue.parse(Array(try #require(Data(base64Encoded: text))))
        return try #require(payload["transactionId"]?.stringValue)
    }

    @Test func aFortyFiveTransactionHistoryOverThreePagesIsImportedAndASecondSyncRecordsNothing() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        apple.production.setPageSizes(history: 20)
        let signed = (0..<45).map { _ in Self.coins("Production") }
        for jws in signed { apple.production.addTransaction(jws) }
        apple.production.addTransaction(Self.coins("Production", customer: "someone-else"))
        let service = try Self.service(apple)
        defer { service.stop() }
        let api = service.client()

        let first = try api.post(
            "/v1/users/u-import/sync", ["transactionId": .string(try Self.transactionId(signed[30]))])
        #expect(first.status == 200, "\(first.text)")
        let results = first.json["transactions"]?.arrayValue ?? []
        #expect(results.count == 45)
        #expect(results.allSatisfy { $0["result"]?.stringValue == "recorded" })
        #expect(first.json["environment"]?.stringValue == "Production")
        #expect(first.json["bundleId"]?.stringValue == TestService.bundleId)
        #expect(first.json["customer"]?["balances"]?["coins"]?.int64Value == 4500)
        #expect(apple.production.requests.filter { $0.path.hasPrefix("/inApps/v2/history/") }.count == 3, "three pages")

        let again = try api.post(
            "/v1/users/u-import/sync", ["transactionId": .string(try Self.transactionId(signed[0]))])
        #expect(again.status == 200)
        #expect((again.json["transactions"]?.arrayValue ?? []).allSatisfy { $0["result"]?.stringValue == "duplicate" })
        #expect(try api.user("u-import")["balances"]?["coins"]?.int64Value == 4500)
        let changes = try ChangeFeedTests.feed(api, userId: "u-import", settled: service.conninfo)
        #expect(changes.count == 45, "a second sync emits nothing")
    }

    @Test func aSandboxOnlyTransactionIsFoundAfterProductionSaysNotFound() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let jws = Self.coins("Sandbox")
        apple.sandbox.addTransaction(jws)
        let service = try Self.service(apple)
        defer { service.stop() }
        let response = try service.client().post(
            "/v1/users/u-sandbox/sync", ["transactionId": .string(try Self.transactionId(jws))])
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["environment"]?.stringValue == "Sandbox")
        #expect(response.json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        #expect(!apple.production.requests.isEmpty, "Production was asked first")
    }

    @Test func withAppleUnreachableSyncAnswers502InBoundedTimeAndRecordsNothing() throws {
        let service = try Self.service(production: "http://127.0.0.1:9/p", sandbox: "http://127.0.0.1:9/s")
        defer { service.stop() }
        let api = service.client()
        let started = Date()
        let response = try api.post("/v1/users/u-down/sync", ["transactionId": "2000000001"])
        #expect(response.status == 502, "\(response.text)")
        #expect(response.json["code"]?.stringValue == "apple_unavailable")
        #expect(Date().timeIntervalSince(started) < 60, "bounded")
        #expect(try api.user("u-down")["version"]?.int64Value == 0, "nothing recorded")
    }

    @Test func badInputIsRefusedBeforeAppleIsAsked() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try Self.service(apple)
        defer { service.stop() }
        let api = service.client()
        for body: JSONValue in [
            [:], ["transactionId": "1", "receipt": "x"], ["transactionId": "12a"], ["transactionId": ""],
            ["transactionId": 12],
        ] {
            let response = try api.post("/v1/users/u-bad/sync", body)
            #expect(response.status == 400, "\(body)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
        }
        #expect(apple.production.requests.isEmpty && apple.sandbox.requests.isEmpty)
        #expect(try service.client("read").post("/v1/users/u-bad/sync", ["transactionId": "1"]).status == 403)

        let unkeyed = try TestService()
        defer { unkeyed.stop() }
        let refused = try unkeyed.client().post("/v1/users/u-bad/sync", ["transactionId": "1"])
        #expect(refused.status == 422)
        #expect(refused.json["code"]?.stringValue == "server_api_not_configured")
    }

    @Test func aTransactionAppleDoesNotKnowIsAppleRejected() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try Self.service(apple)
        defer { service.stop() }
        let response = try service.client().post("/v1/users/u-none/sync", ["transactionId": "999999"])
        #expect(response.status == 422, "\(response.text)")
        #expect(response.json["code"]?.stringValue == "apple_rejected")
        #expect(response.json["appleErrorCode"]?.int64Value == 4_040_010)
    }

    /// StoreKit 1 apps sync by their receipt: the id is read from it locally, no verifyReceipt.
    @Test func aReceiptNamesTheTransactionToSyncAndOneWithoutPurchasesIs422() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let jws = Self.coins("Production")
        apple.production.addTransaction(jws)
        let service = try Self.service(apple)
        defer { service.stop() }
        let api = service.client()
        let id = try Self.transactionId(jws)
        func receipt(_ purchases: [AppReceiptContents.Purchase]) -> String {
            TestReceipts.receipt(
                AppReceiptContents(bundleId: TestVectors.bundleId, appVersion: "1", purchases: purchases).der())
        }
        let now = TestVectors.nowMillis
        let named = receipt([
            .init(
                productId: TestService.coins, transactionId: id, originalTransactionId: id,
                purchaseDate: now, originalPurchaseDate: now)
        ])
        let synced = try api.post("/v1/users/u-receipt/sync", ["receipt": .string(named)])
        #expect(synced.status == 200, "\(synced.text)")
        #expect(synced.json["transactions"]?[0]?["transactionId"]?.stringValue == id)
        #expect(apple.production.requests.first?.path == "/inApps/v2/history/\(id)")

        let empty = try api.post("/v1/users/u-receipt/sync", ["receipt": .string(receipt([]))])
        #expect(empty.status == 422, "\(empty.text)")
        #expect(empty.json["code"]?.stringValue == "verification_failed")
        #expect(empty.json["detail"]?.stringValue?.contains("no in-app purchase") == true)
        let garbage = try api.post("/v1/users/u-receipt/sync", ["receipt": "not a receipt"])
        #expect(garbage.status == 400)
    }
}
