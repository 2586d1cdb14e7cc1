import AppStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import AppleAPI
@testable import Infrastructure
@testable import Service

/// `POST /v1/offers/signatures` over real HTTP: what it answers verifies with the public half of
/// Apple's test key (through the `openssl` command line), carries the fields Apple's creators
/// sign, and is signed by the app that sells the product.
@Suite(.tags(.database)) struct OfferRoutesTests {
    static let pem = try! String(contentsOf: OpenSSLCommandLine.testSigningKey, encoding: .utf8)

    static func signer(_ bundleId: String) -> OfferSigner {
        try! OfferSigner(bundleId: bundleId, keyId: "KEY\(bundleId.count)", issuerId: "issuer-1", privateKeyPEM: pem)
    }

    /// Signers for `bundleIds` only.
    static func signers(_ bundleIds: Set<String>) -> OfferRoutes.SignerLookup {
        let made = Dictionary(uniqueKeysWithValues: bundleIds.map { ($0, signer($0)) })
        return { made[$0] }
    }

    static let other = "com.example.other"

    /// The test app plus `com.example.other`, which alone sells `com.example.other.gems`.
    static func twoApps() -> Configuration {
        var configuration = TestService.configuration()
        configuration.apps.append(
            Configuration.App(
                bundleId: other, appAppleId: 2, environments: ["Sandbox"], sharedSecret: nil,
                products: ["com.example.other.gems": .init(kind: .consumable, entitlements: [], grants: ["gems": 5])]))
        return configuration
    }

    func claims(_ jws: String) throws -> JSONValue {
        let part = String(jws.split(separator: ".")[1])
        return try JSONValue.parse(try #require(OpenSSLCommandLine.base64URLDecode(part)))
    }

    @Test func bothSignaturesVerifyAndCarryWhatApplesCreatorsSign() throws {
        let service = try TestService(offerSigners: Self.signers([TestService.bundleId]))
        defer { service.stop() }
        let before = service.clock.now
        let response = try service.client("write").post(
            "/v1/offers/signatures",
            [
                "productId": .string(TestService.monthly), "offerId": "winback_50", "userId": "User-42",
                "transactionId": "2000000123",
            ])
        let after = service.clock.now
        #expect(response.status == 200, "\(response.text)")
        let body = response.json
        #expect(body["bundleId"]?.stringValue == TestService.bundleId)
        let jws = try #require(body["jws"]?.stringValue)
        #expect(try OpenSSLCommandLine.verifiesJWS(jws))
        let claims = try claims(jws)
        #expect(claims["bid"]?.stringValue == TestService.bundleId)
        #expect(claims["iss"]?.stringValue == "issuer-1")
        #expect(claims["aud"]?.stringValue == "promotional-offer")
        #expect(claims["productId"]?.stringValue == TestService.monthly)
        #expect(claims["offerIdentifier"]?.stringValue == "winback_50")
        #expect(claims["transactionId"]?.stringValue == "2000000123")
        let legacy = try #require(body["legacy"])
        let nonce = try #require(legacy["nonce"]?.stringValue)
        let timestamp = try #require(legacy["timestamp"]?.int64Value)
        #expect(claims["nonce"]?.stringValue == nonce)
        #expect(nonce == nonce.lowercased() && UUID(uuidString: nonce) != nil)
        #expect((before...after).contains(timestamp))
        #expect(claims["iat"]?.int64Value == timestamp / 1000)
        #expect(legacy["keyIdentifier"]?.stringValue == "KEY\(TestService.bundleId.count)")
        // What Apple's PromotionalOfferSignatureCreator signs, rebuilt from the answer alone.
        let payload = [
            TestService.bundleId, "KEY\(TestService.bundleId.count)", TestService.monthly, "winback_50",
            "user-42", nonce, String(timestamp),
        ].joined(separator: "\u{2063}")
        let signature = try #require(legacy["signature"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        #expect(try OpenSSLCommandLine.verifies(signatureDER: Array(signature), message: Array(payload.utf8)))
        #expect(
            try !OpenSSLCommandLine.verifies(
                signatureDER: Array(signature),
                message: Array(payload.replacingOccurrences(of: "user-42", with: "User-42").utf8)))
    }

    /// Without injected signers the route signs with the app's `serverAPI` key from the config.
    @Test func theConfiguredServerAPIKeySignsAndAnAppWithoutOneIsRefused() throws {
        var configuration = TestService.configuration()
        let path = TestVectors.fixtures.appendingPathComponent("test-pki/testSigningKey.p8").path
        configuration.apps[0].serverAPI = Configuration.ServerAPI(
            issuerId: "issuer-config", keyId: "KEYCONFIG1", privateKeyPath: path,
            key: AppStoreServerKey.testKey(issuerId: "issuer-config", keyId: "KEYCONFIG1"))
        configuration.reconcileIntervalSeconds = 0  // the key points at Apple itself: no background calls
        let service = try TestService(configuration: configuration)
        defer { service.stop() }
        let response = try service.client("write").post(
            "/v1/offers/signatures",
            [
                "productId": .string(TestService.monthly), "offerId": "winback_50", "userId": "u-1",
            ])
        #expect(response.status == 200, "\(response.text)")
        let jws = try #require(response.json["jws"]?.stringValue)
        #expect(try OpenSSLCommandLine.verifiesJWS(jws))
        #expect(try claims(jws)["iss"]?.stringValue == "issuer-config")
        #expect(response.json["legacy"]?["keyIdentifier"]?.stringValue == "KEYCONFIG1")

        let unkeyed = try TestService()
        defer { unkeyed.stop() }
        let refused = try unkeyed.client("write").post(
            "/v1/offers/signatures",
            [
                "productId": .string(TestService.monthly), "offerId": "winback_50", "userId": "u-1",
            ])
        #expect(refused.status == 422)
        #expect(refused.json["code"]?.stringValue == "server_api_not_configured")
    }

    @Test func eachAnswerHasAFreshNonceAndNoTransactionIdWhenNoneIsSent() throws {
        let service = try TestService(offerSigners: Self.signers([TestService.bundleId]))
        defer { service.stop() }
        let client = service.client("write")
        let request: JSONValue = ["productId": .string(TestService.monthly), "offerId": "o", "userId": "u-1"]
        let first = try client.post("/v1/offers/signatures", request).json
        let second = try client.post("/v1/offers/signatures", request).json
        #expect(first["legacy"]?["nonce"] != second["legacy"]?["nonce"])
        #expect(try claims(try #require(first["jws"]?.stringValue))["transactionId"] == nil)
    }

    @Test func theProductsAppSignsAndAmbiguityAsksForBundleId() throws {
        let service = try TestService(
            configuration: Self.twoApps(), offerSigners: Self.signers([TestService.bundleId, Self.other]))
        defer { service.stop() }
        let client = service.client("write")
        func bid(_ body: JSONValue) throws -> (Int, String?) {
            let response = try client.post("/v1/offers/signatures", body)
            return (response.status, response.json["jws"]?.stringValue.flatMap { try? claims($0)["bid"]?.stringValue })
        }
        #expect(try bid(["productId": "com.example.other.gems", "offerId": "o", "userId": "u"]) == (200, Self.other))
        #expect(
            try bid(["productId": .string(TestService.coins), "offerId": "o", "userId": "u"])
                == (200, TestService.bundleId))
        // Sold by neither app, and both have a key: the client must say which.
        let unknown = try client.post(
            "/v1/offers/signatures", ["productId": "com.example.new", "offerId": "o", "userId": "u"])
        #expect(unknown.status == 400)
        #expect(unknown.json["detail"]?.stringValue?.contains("bundleId") == true)
        #expect(
            try bid(["productId": "com.example.new", "offerId": "o", "userId": "u", "bundleId": .string(Self.other)])
                == (200, Self.other))
        let notAnApp = try client.post(
            "/v1/offers/signatures",
            ["productId": "com.example.new", "offerId": "o", "userId": "u", "bundleId": "com.nope"])
        #expect(notAnApp.status == 422)
        #expect(notAnApp.json["code"]?.stringValue == "server_api_not_configured")
    }

    @Test func withOneKeyedAppAnUnlistedProductIsSignedByIt() throws {
        let service = try TestService(configuration: Self.twoApps(), offerSigners: Self.signers([Self.other]))
        defer { service.stop() }
        let client = service.client("write")
        let signed = try client.post(
            "/v1/offers/signatures", ["productId": "com.example.new", "offerId": "o", "userId": "u"])
        #expect(signed.status == 200)
        #expect(signed.json["bundleId"]?.stringValue == Self.other)
        // The product's own app has no key: that is said, not signed with another app's key.
        let listed = try client.post(
            "/v1/offers/signatures", ["productId": .string(TestService.monthly), "offerId": "o", "userId": "u"])
        #expect(listed.status == 422)
        #expect(listed.json["code"]?.stringValue == "server_api_not_configured")
        #expect(listed.json["detail"]?.stringValue?.contains(TestService.bundleId) == true)
    }

    @Test func withoutAServerAPIKeyTheAnswerIsAStableProblem() throws {
        let service = try TestService()
        defer { service.stop() }
        let response = try service.client("write").post(
            "/v1/offers/signatures", ["productId": .string(TestService.monthly), "offerId": "o", "userId": "u"])
        #expect(response.status == 422)
        #expect(response.headers["content-type"] == "application/problem+json")
        #expect(response.json["code"]?.stringValue == "server_api_not_configured")
        #expect(
            try service.client("read").post(
                "/v1/offers/signatures", ["productId": .string(TestService.monthly), "offerId": "o", "userId": "u"]
            ).status == 403)
    }

    @Test func badInputIsA400NamingTheField() throws {
        let service = try TestService(offerSigners: Self.signers([TestService.bundleId]))
        defer { service.stop() }
        let client = service.client("write")
        let valid: [String: JSONValue] = ["productId": .string(TestService.monthly), "offerId": "o", "userId": "u"]
        var cases: [(JSONValue, String)] = []
        for field in ["productId", "offerId", "userId"] {
            var missing = valid
            missing[field] = nil
            cases.append((.object(missing), field))
            for wrong: JSONValue in [.int(1), .null, "", .string(String(repeating: "a", count: 257)), "a\u{1}"] {
                var body = valid
                body[field] = wrong
                cases.append((.object(body), field))
            }
        }
        var withNumber = valid
        withNumber["transactionId"] = .int(2_000_000_123)
        cases.append((.object(withNumber), "transactionId"))
        for (body, field) in cases {
            let response = try client.post("/v1/offers/signatures", body)
            #expect(response.status == 400, "\(body.serialized()): \(response.text)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
            #expect(response.json["detail"]?.stringValue?.contains(field) == true, "\(response.text)")
        }
        let notJSON = try client.request("POST", "/v1/offers/signatures", body: Array("{".utf8))
        #expect(notJSON.status == 400)
    }
}
