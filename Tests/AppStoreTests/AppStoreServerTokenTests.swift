import Foundation
import JSON
import TestSupport
import Testing

@testable import AppStore

/// The Server API token against Apple's rules (AppStoreServerTokenCheck is Apple's side): what
/// the builder makes is always accepted, and what breaks a rule is refused.
@Suite struct AppStoreServerTokenTests {
    static let key = AppStoreServerKey.testKey(issuerId: "57246542-96fe-1a63-e053-0824d011072a", keyId: "2X9R4HXF34")
    static let now: Int64 = 1_767_000_000_123

    static func check(keyId: String = key.keyId, issuerId: String = key.issuerId, bundleId: String = "com.example")
        throws -> AppStoreServerTokenCheck
    {
        try AppStoreServerTokenCheck(
            issuerId: issuerId, keyId: keyId, bundleId: bundleId, publicKeyPEM: key.publicKeyPEM)
    }

    static func decode(_ segment: Substring) throws -> JSONValue {
        var text = String(segment)
        let bytes = try #require(text.withUTF8 { Base64.decodeURL($0) })
        return try JSONValue.parse(bytes)
    }

    /// Signs arbitrary header and claims with the same key (what a buggy builder could make).
    static func forge(header: String = #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#, claims: JSONValue) -> String
    {
        key.signer.sign(payload: claims.serialized(), header: Array(header.utf8))
    }

    static func claims(
        iss: String = key.issuerId, iat: Int64 = now / 1000, exp: Int64 = now / 1000 + 300,
        aud: String = "appstoreconnect-v1", bid: String = "com.example"
    ) -> JSONValue {
        ["iss": .string(iss), "iat": .int(iat), "exp": .int(exp), "aud": .string(aud), "bid": .string(bid)]
    }

    @Test func headerAndClaimsAreApples() throws {
        let token = AppStoreServerToken(key: Self.key, bundleId: "com.example").token(nowMillis: Self.now)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(try Self.decode(parts[0]) == ["alg": "ES256", "kid": "2X9R4HXF34", "typ": "JWT"])
        let claims = try Self.decode(parts[1])
        #expect(claims == Self.claims())
        #expect(claims["exp"]!.int64Value! - claims["iat"]!.int64Value! == 300)
    }

    @Test func signatureVerifiesWithThePublicHalf() throws {
        let token = AppStoreServerToken(key: Self.key, bundleId: "com.example").token(nowMillis: Self.now)
        try Self.check().check(token, nowMillis: Self.now)
        // The same token with one byte of the signature changed is refused: the check really verifies.
        var bytes = Array(token.utf8)
        let last = bytes.count - 5
        bytes[last] = bytes[last] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: AppStoreServerTokenCheck.Refusal.self) {
            try Self.check().check(String(decoding: bytes, as: UTF8.self), nowMillis: Self.now)
        }
    }

    /// Whatever lifetime is asked for and whenever it is built, Apple accepts the token for the
    /// rest of its life: no refused token can come out of the builder.
    @Test func theBuilderNeverMakesATokenAppleRefuses() throws {
        let check = try Self.check()
        for lifetime: Int64 in [-5, 0, 1, 300, 3599, 3600, 3601, 86_400] {
            let builder = AppStoreServerToken(key: Self.key, bundleId: "com.example", lifetimeSeconds: lifetime)
            #expect((1...3600).contains(builder.lifetimeSeconds))
            for offset: Int64 in [0, 999, 1000, 123_456_789] {
                let issued = Self.now + offset
                let token = builder.token(nowMillis: issued)
                try check.check(token, nowMillis: issued)
                let claims = try Self.decode(token.split(separator: ".")[1])
                #expect(claims["exp"]!.int64Value! - claims["iat"]!.int64Value! <= 3600)
                #expect(claims["aud"] == "appstoreconnect-v1")
            }
        }
        // A fresh token per request: another instant, another token.
        let builder = AppStoreServerToken(key: Self.key, bundleId: "com.example")
        #expect(builder.token(nowMillis: Self.now) != builder.token(nowMillis: Self.now + 1000))
    }

    @Test func appleRefusesWhatBreaksARule() throws {
        let check = try Self.check()
        let refused: [(String, String)] = [
            ("wrong aud", Self.forge(claims: Self.claims(aud: "appstoreconnect-v2"))),
            ("exp too far", Self.forge(claims: Self.claims(exp: Self.now / 1000 + 3601))),
            ("expired", Self.forge(claims: Self.claims(iat: Self.now / 1000 - 400, exp: Self.now / 1000 - 100))),
            ("wrong iss", Self.forge(claims: Self.claims(iss: "someone-else"))),
            ("wrong bid", Self.forge(claims: Self.claims(bid: "com.example.other"))),
            (
                "wrong kid",
                Self.forge(header: #"{"alg":"ES256","kid":"OTHERKEY99","typ":"JWT"}"#, claims: Self.claims())
            ),
            ("alg none", Self.forge(header: #"{"alg":"none","kid":"2X9R4HXF34","typ":"JWT"}"#, claims: Self.claims())),
            ("not a JWS", "a.b"),
        ]
        for (why, token) in refused {
            #expect(throws: AppStoreServerTokenCheck.Refusal.self, "\(why)") {
                try check.check(token, nowMillis: Self.now)
            }
        }
        // The control: the same forging with every rule kept is accepted.
        try check.check(Self.forge(claims: Self.claims()), nowMillis: Self.now)
        // Signed by another P-256 key (the test PKI's leaf) under the right kid: refused.
        let other = TestVectors.shared.signer.sign(
            payload: Self.claims().serialized(), header: Array(#"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#.utf8))
        #expect(throws: AppStoreServerTokenCheck.Refusal.self) { try check.check(other, nowMillis: Self.now) }
    }

    @Test func keysThatAreNotP256AreRefused() {
        for (why, pem) in [
            ("P-384", NotAppStoreKeys.p384PEM), ("Ed25519", NotAppStoreKeys.ed25519PEM), ("not PEM", "hello"),
        ] {
            #expect(throws: AppStoreServerKey.LoadError.self, "\(why)") {
                _ = try AppStoreServerKey(issuerId: "i", keyId: "k", privateKeyPEM: pem)
            }
        }
        #expect(throws: AppStoreServerKey.LoadError.self) {
            _ = try AppStoreServerKey.load(issuerId: "i", keyId: "k", path: "/nonexistent/SubscriptionKey.p8")
        }
        #expect(throws: AppStoreServerKey.LoadError.self) {
            _ = try AppStoreServerKey(issuerId: "", keyId: "k", privateKeyPEM: "")
        }
    }
}
