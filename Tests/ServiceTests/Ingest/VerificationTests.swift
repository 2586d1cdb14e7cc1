import AppStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Every rejection of the verifier surfaces as 422 `verification_failed` with its `reason`, and
/// StoreKit 1 receipts go through verifyReceipt (a stand-in server on 127.0.0.1).
@Suite(.tags(.database)) final class VerificationTests {
    let vectors = TestVectors.shared

    func replacing(_ jws: String, segment: Int, with text: String) -> String {
        var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[segment] = text
        return parts.joined(separator: ".")
    }

    func expectProblem(
        _ response: ServiceHTTPClient.Response, _ status: Int, _ code: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.headers["content-type"] == "application/problem+json", sourceLocation: sourceLocation)
        let body = response.json
        #expect(body["code"]?.stringValue == code, sourceLocation: sourceLocation)
        #expect(body["status"]?.int64Value == Int64(status), sourceLocation: sourceLocation)
        #expect(body["type"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(body["title"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(body["detail"]?.stringValue != nil, sourceLocation: sourceLocation)
        #expect(body["requestId"]?.stringValue == response.headers["x-request-id"], sourceLocation: sourceLocation)
        #expect(body["requestId"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
    }

    @Test func everyRejectionReasonIs422WithThatReasonAndAppendsNothing() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        let payload = vectors.transactionPayload(
            Mint.transaction(
                "6000001", product: TestService.monthly, purchase: now - day, expires: now + day, signed: now - day)
        ).serialized()
        let good = vectors.signer.sign(payload: payload)
        let swapped = try JWSSigner(
            privateKeyPEM: String(
                contentsOf: TestVectors.fixtures.appendingPathComponent("test-pki/testLeaf.key"), encoding: .utf8),
            chainDER: [vectors.leafDER, vectors.rootDER, vectors.rootDER])
        let hs256 = String(decoding: vectors.signer.defaultHeader, as: UTF8.self)
            .replacingOccurrences(of: "\"ES256\"", with: "\"HS256\"")
        let cases: [(reason: String, jws: String)] = [
            ("malformed", "not-a-jws"),
            ("malformed", replacing(good, segment: 1, with: "!!!")),
            ("unsupported_algorithm", vectors.signer.sign(payload: payload, header: Array(hs256.utf8))),
            (
                "invalid_certificate",
                vectors.signer.sign(
                    payload: payload, header: Array(#"{"alg":"ES256","x5c":["AAAA","AAAA","AAAA"]}"#.utf8))
            ),
            ("invalid_chain", swapped.sign(payload: payload)),
            (
                "signature_mismatch",
                replacing(
                    good, segment: 1,
                    with: JWSSigner.base64URL(
                        vectors.transactionPayload(["productId": .string(TestService.yearly)]).serialized()))
            ),
            ("unknown_app", vectors.signedTransaction(["bundleId": .string("com.other")])),
            ("wrong_environment", vectors.signedTransaction(["environment": .string("Xcode")])),
        ]
        for (reason, jws) in cases {
            let response = try api.purchase("u-rejected", jws)
            expectProblem(response, 422, "verification_failed")
            #expect(response.json["reason"]?.stringValue == reason, "\(reason): \(response.text)")
        }
        // Notifications: the outer signature, and the nested transaction, are both checked (a
        // transaction's environment means nothing as a notification: its own is tested below).
        for (reason, jws) in cases where reason != "wrong_environment" {
            let response = try api.notify(jws)
            expectProblem(response, 422, "verification_failed")
            #expect(response.json["reason"]?.stringValue == reason, "notification \(reason): \(response.text)")
        }
        let nested = vectors.signedNotification(type: "DID_RENEW", transaction: ["bundleId": .string("com.other")])
        #expect(try api.notify(nested).json["reason"]?.stringValue == "unknown_app")
        let wrongEnvironment = vectors.signedNotification(
            type: "TEST", transaction: nil, data: ["environment": .string("Xcode")])
        #expect(try api.notify(wrongEnvironment).json["reason"]?.stringValue == "wrong_environment")
        #expect(try storedEventCount(service) == 0)
        #expect(try api.events("u-rejected").isEmpty)
    }

    @Test func invalidRequestsAre400() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let signed = vectors.signedTransaction()
        for body in [
            #"{"userId":"u","signedTransaction":"#, "[]", #"{"signedTransaction":"x"}"#, #"{"userId":"u"}"#,
            #"{"userId":"","signedTransaction":"x"}"#,
            "{\"userId\":\"u\",\"signedTransaction\":\"\(signed)\",\"receipt\":\"x\"}",
        ] {
            expectProblem(try api.request("POST", "/v1/purchases", body: Array(body.utf8)), 400, "invalid_request")
        }
        for body in [
            #"{"amount":0,"idempotencyKey":"k"}"#, #"{"amount":1.5,"idempotencyKey":"k"}"#,
            #"{"amount":-3,"idempotencyKey":"k"}"#,
            #"{"amount":"3","idempotencyKey":"k"}"#, #"{"amount":3}"#,
        ] {
            expectProblem(
                try api.request("POST", "/v1/users/u/balances/coins/debit", body: Array(body.utf8)), 400,
                "invalid_request")
        }
        expectProblem(
            try api.request("POST", "/v1/notifications/apple", body: Array("{}".utf8)), 400, "invalid_request")
        expectProblem(try api.get("/v1/users/u/events?limit=0"), 400, "invalid_request")
        expectProblem(try api.get("/v1/subscriptions/nothing-here"), 404, "not_found")
        expectProblem(try api.get("/v1/nowhere"), 404, "not_found")
        expectProblem(try api.request("PUT", "/v1/users/u"), 405, "method_not_allowed")
        expectProblem(try service.client(nil).get("/v1/users/u"), 401, "unauthorized")
        expectProblem(try service.client("write").get("/v1/users/u"), 403, "forbidden")
        #expect(try storedEventCount(service) == 0)
    }

    static let sandboxReceipt = """
        {"status":0,"environment":"Sandbox","receipt":{"bundle_id":"com.example","request_date_ms":"1760000000000",
        "in_app":[{"quantity":"1","product_id":"com.example.removeads","transaction_id":"6100001",
        "original_transaction_id":"6100001","purchase_date_ms":"1759990000000","original_purchase_date_ms":"1759990000000",
        "in_app_ownership_type":"PURCHASED"}]}}
        """
    /// A receipt of the real shape: the service refuses any other before asking Apple.
    static let receipt = TestReceipts.receipt()

    @Test func sandboxReceiptFallsBackOn21007AndIsRecorded() throws {
        let apple = try StandInServer([
            "/prod": [(200, #"{"status":21007}"#)], "/sandbox": [(200, Self.sandboxReceipt)],
        ])
        defer { apple.stop() }
        let service = try TestService(
            configuration: TestService.configuration(verifyReceiptBase: "http://127.0.0.1:\(apple.port)"))
        defer { service.stop() }
        let response = try service.client("write").receipt("u-receipt", Self.receipt)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["transactions"]?[0]?["transactionId"]?.stringValue == "6100001")
        #expect(response.json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        #expect(response.json["customer"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(apple.hitCount("/prod") == 1)
        #expect(apple.hitCount("/sandbox") == 1)
        let sent = try JSONValue.parse(apple.requestBodies[0])
        #expect(sent["receipt-data"]?.stringValue == Self.receipt)
        #expect(sent["password"]?.stringValue == TestService.sharedSecret)
        let again = try service.client("write").receipt("u-receipt", Self.receipt)
        #expect(again.json["transactions"]?[0]?["result"]?.stringValue == "duplicate")
        #expect(
            try service.client().user("u-receipt")["nonConsumables"]?[0]?["transactionId"]?.stringValue == "6100001")
    }

    @Test func withSeveralAppsEachSharedSecretIsTriedWhileAppleAnswers21004() throws {
        let apple = try StandInServer([
            "/prod": [(200, #"{"status":21004}"#), (200, #"{"status":21007}"#)],
            "/sandbox": [(200, Self.sandboxReceipt)],
        ])
        defer { apple.stop() }
        var configuration = TestService.configuration(verifyReceiptBase: "http://127.0.0.1:\(apple.port)")
        var other = configuration.apps[0]
        other.bundleId = "com.example.other"
        other.sharedSecret = "other-app-secret"
        other.products = [:]
        configuration.apps.insert(other, at: 0)
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let response = try service.client("write").receipt("u-receipt", Self.receipt)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        let passwords = try apple.requestBodies.map { try JSONValue.parse($0)["password"]?.stringValue }
        #expect(passwords == ["other-app-secret", TestService.sharedSecret, TestService.sharedSecret])
    }

    @Test func rejectedReceiptIs422WithAppleStatus() throws {
        let apple = try StandInServer(["/prod": [(200, #"{"status":21003}"#)]])
        defer { apple.stop() }
        let service = try TestService(
            configuration: TestService.configuration(verifyReceiptBase: "http://127.0.0.1:\(apple.port)"))
        defer { service.stop() }
        let response = try service.client("write").receipt("u-receipt", Self.receipt)
        expectProblem(response, 422, "verification_failed")
        #expect(response.json["reason"]?.stringValue == "receipt_rejected")
        #expect(response.json["appleStatus"]?.int64Value == 21003)
        #expect(try storedEventCount(service) == 0)
    }

    @Test func unreachableVerifyReceiptIs502AppleUnavailable() throws {
        let apple = try StandInServer([:])
        let port = apple.port
        apple.stop()  // nothing listens there any more
        let service = try TestService(
            configuration: TestService.configuration(verifyReceiptBase: "http://127.0.0.1:\(port)"))
        defer { service.stop() }
        let response = try service.client("write").receipt("u-receipt", Self.receipt)
        expectProblem(response, 502, "apple_unavailable")
        #expect(response.headers["retry-after"] != nil)
        #expect(try storedEventCount(service) == 0)
    }
}
