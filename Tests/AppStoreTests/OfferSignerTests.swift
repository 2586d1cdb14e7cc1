import AppStore
import Foundation
import JSON
import TestSupport
import Testing

/// Offer signatures as Apple's app-store-server-library makes them (JWSSignatureCreatorTests and
/// PromotionalOfferSignatureCreatorTests use the same key, ids and inputs), each checked with the
/// `openssl` command line and the public half of Apple's test `.p8`.
@Suite struct OfferSignerTests {
    let signer: OfferSigner
    static let nonce = UUID(uuidString: "20FBA8A0-2B80-4A7D-A17F-85C1854727F8")!
    static let now: Int64 = 1_698_148_900_123

    init() throws {
        let pem = try String(contentsOf: OpenSSLCommandLine.testSigningKey, encoding: .utf8)
        signer = try OfferSigner(bundleId: "bundleId", keyId: "keyId", issuerId: "issuerId", privateKeyPEM: pem)
    }

    func segment(_ jws: String, _ index: Int) throws -> [String: JSONValue] {
        let part = String(jws.split(separator: ".", omittingEmptySubsequences: false)[index])
        let bytes = try #require(OpenSSLCommandLine.base64URLDecode(part))
        return try #require(try JSONValue.parse(bytes).objectValue)
    }

    @Test func theV2JWSCarriesExactlyTheLibrarysHeaderAndClaimsAndVerifies() throws {
        let jws = try signer.promotionalOfferV2(
            productId: "productId", offerIdentifier: "offerIdentifier", transactionId: "transactionId",
            nonce: Self.nonce, now: Self.now)
        #expect(try segment(jws, 0) == ["alg": "ES256", "kid": "keyId", "typ": "JWT"])
        #expect(
            try segment(jws, 1) == [
                "iss": "issuerId", "iat": .int(1_698_148_900), "aud": "promotional-offer", "bid": "bundleId",
                "nonce": "20fba8a0-2b80-4a7d-a17f-85c1854727f8", "productId": "productId",
                "offerIdentifier": "offerIdentifier", "transactionId": "transactionId",
            ])
        #expect(try OpenSSLCommandLine.verifiesJWS(jws))
        // The check can fail: another payload under the same signature does not verify.
        var parts = jws.split(separator: ".").map(String.init)
        parts[1] = JWSSigner.base64URL(Array(#"{"productId":"other"}"#.utf8))
        #expect(try !OpenSSLCommandLine.verifiesJWS(parts.joined(separator: ".")))
    }

    @Test func theV2JWSLeavesOutTransactionIdWhenNoneIsGiven() throws {
        let jws = try signer.promotionalOfferV2(
            productId: "productId", offerIdentifier: "offerIdentifier", transactionId: nil, nonce: Self.nonce,
            now: Self.now)
        let claims = try segment(jws, 1)
        #expect(claims["transactionId"] == nil)
        #expect(claims["exp"] == nil)
        #expect(Set(claims.keys) == ["iss", "iat", "aud", "bid", "nonce", "productId", "offerIdentifier"])
        #expect(try OpenSSLCommandLine.verifiesJWS(jws))
    }

    @Test func theLegacyPayloadIsTheLibrarysStringForFixedInputs() {
        let payload = signer.legacyPayload(
            productIdentifier: "productId", offerIdentifier: "offerId", applicationUsername: "AppAccountToken",
            nonce: Self.nonce, timestamp: 1_698_148_900_000)
        #expect(
            payload == "bundleId\u{2063}keyId\u{2063}productId\u{2063}offerId\u{2063}appaccounttoken"
                + "\u{2063}20fba8a0-2b80-4a7d-a17f-85c1854727f8\u{2063}1698148900000")
        #expect(Array(payload.utf8).filter { $0 == 0xE2 }.count == 6, "U+2063 is E2 81 A3 in UTF-8")
    }

    @Test func theLegacySignatureIsDERBase64OverThePayloadAndVerifies() throws {
        let legacy = signer.legacySignature(
            productIdentifier: "productId", offerIdentifier: "offerId", applicationUsername: "User-7",
            nonce: Self.nonce, timestamp: 1_698_148_900_000)
        #expect(legacy.keyIdentifier == "keyId")
        #expect(legacy.nonce == "20fba8a0-2b80-4a7d-a17f-85c1854727f8")
        #expect(legacy.timestamp == 1_698_148_900_000)
        let der = try #require(Data(base64Encoded: legacy.signature).map(Array.init))
        #expect(der.first == 0x30, "a DER SEQUENCE, not raw R‖S")
        let payload = signer.legacyPayload(
            productIdentifier: "productId", offerIdentifier: "offerId", applicationUsername: "User-7",
            nonce: Self.nonce, timestamp: 1_698_148_900_000)
        #expect(try OpenSSLCommandLine.verifies(signatureDER: der, message: Array(payload.utf8)))
        #expect(try !OpenSSLCommandLine.verifies(signatureDER: der, message: Array((payload + "1").utf8)))
        // The username is signed lower-cased, as the libraries do: the same signature holds for it.
        #expect(payload.contains("\u{2063}user-7\u{2063}"))
    }

    @Test func aKeyThatIsNotAReadableP256KeyIsATypedError() throws {
        #expect(throws: OfferSignerError.notP256) {
            try OfferSigner(
                bundleId: "b", keyId: "k", issuerId: "i",
                privateKeyPEM: try OpenSSLCommandLine.generateKey([
                    "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384",
                ]))
        }
        #expect(throws: OfferSignerError.notP256) {
            try OfferSigner(
                bundleId: "b", keyId: "k", issuerId: "i",
                privateKeyPEM: try OpenSSLCommandLine.generateKey(["-algorithm", "ED25519"]))
        }
        for garbage in ["", "not a key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"] {
            #expect {
                try OfferSigner(bundleId: "b", keyId: "k", issuerId: "i", privateKeyPEM: garbage)
            } throws: { error in
                if case .unreadableKey = error as? OfferSignerError { return true }
                return false
            }
        }
        let pem = try String(contentsOf: OpenSSLCommandLine.testSigningKey, encoding: .utf8)
        #expect(throws: OfferSignerError.missingField("keyId")) {
            try OfferSigner(bundleId: "b", keyId: "", issuerId: "i", privateKeyPEM: pem)
        }
        let withoutIssuer = try OfferSigner(bundleId: "b", keyId: "k", issuerId: nil, privateKeyPEM: pem)
        #expect(throws: OfferSignerError.missingField("issuerId")) {
            try withoutIssuer.promotionalOfferV2(
                productId: "p", offerIdentifier: "o", transactionId: nil, nonce: Self.nonce, now: Self.now)
        }
    }
}
