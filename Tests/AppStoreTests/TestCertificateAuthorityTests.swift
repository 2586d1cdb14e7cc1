import Foundation
import JSON
import TestStore
import TestSupport
import Testing

@testable import AppStore

/// The testkit's generated CA must make data that Apple's verification procedure accepts in full
/// (chain, OIDs, signature) — checked here with a Sandbox verifier, because LocalTesting data skips
/// the cryptography — and nothing else: a tampered payload or another root is refused.
@Suite struct TestCertificateAuthorityTests {
    static let now = Int64(Date().timeIntervalSince1970)
    static let authority: TestCertificateAuthority = {
        do { return try TestCertificateAuthority.generate(now: now) } catch { preconditionFailure("\(error)") }
    }()

    func verifier(trusting roots: [[UInt8]], environment: String = "Sandbox") throws -> SignedDataVerifier {
        try SignedDataVerifier(
            trustedRootsDER: roots,
            apps: [AppIdentity(bundleId: "com.example", appAppleId: nil, environments: [environment])])
    }

    func transaction(_ fields: [String: JSONValue] = [:]) -> JSONValue {
        var payload = TestVectors.shared.transactionPayload().objectValue!
        for (key, value) in fields { payload[key] = value }
        return .object(payload)
    }

    @Test func theGeneratedChainVerifiesLikeApplesAndDecodes() throws {
        let signer = try Self.authority.signer()
        let verifier = try verifier(trusting: [Self.authority.rootDER])
        let t = try verifier.verifyTransaction(
            signer.sign(payload: transaction(["productId": "com.example.pro"]).serialized()))
        #expect(t.productId == "com.example.pro")

        let inner = signer.sign(payload: transaction(["transactionId": "77"]).serialized())
        let notification: JSONValue = [
            "notificationType": "REFUND", "notificationUUID": "6b1e0c1a-0000-4000-8000-000000000001", "version": "2.0",
            "signedDate": .int(Self.now * 1000),
            "data": ["bundleId": "com.example", "environment": "Sandbox", "signedTransactionInfo": .string(inner)],
        ]
        let n = try verifier.verifyNotification(signer.sign(payload: notification.serialized()))
        #expect(n.transaction?.transactionId == "77")
    }

    @Test func aTamperedPayloadIsASignatureMismatch() throws {
        let signer = try Self.authority.signer()
        let verifier = try verifier(trusting: [Self.authority.rootDER])
        let jws = signer.sign(payload: transaction().serialized())
        var parts = jws.split(separator: ".").map(String.init)
        parts[1] = JWSSigner.base64URL(transaction(["price": .number("1")]).serialized())
        #expect(rejection { _ = try verifier.verifyTransaction(parts.joined(separator: ".")) } == .signatureMismatch)
    }

    @Test func itIsTrustedOnlyWhereItsOwnRootIs() throws {
        let jws = try Self.authority.signer().sign(payload: transaction().serialized())
        // Apple's root (the default) and another testkit CA's root both refuse it.
        #expect(rejection { _ = try verifier(trusting: [AppleRoots.g3DER]).verifyTransaction(jws) } == .invalidChain)
        let other = try TestCertificateAuthority.generate(now: Self.now)
        #expect(other.rootDER != Self.authority.rootDER)
        #expect(rejection { _ = try verifier(trusting: [other.rootDER]).verifyTransaction(jws) } == .invalidChain)
    }

    @Test func theRootIsRecognisedAsATestkitRootAndNothingElseIs() throws {
        #expect(TestCertificateAuthority.isTestkitRoot(der: Self.authority.rootDER))
        #expect(!TestCertificateAuthority.isTestkitRoot(der: Self.authority.intermediateDER))
        #expect(!TestCertificateAuthority.isTestkitRoot(der: AppleRoots.g3DER))
        #expect(!TestCertificateAuthority.isTestkitRoot(der: TestVectors.shared.rootDER))
        #expect(!TestCertificateAuthority.isTestkitRoot(der: Array("not a certificate".utf8)))
        let pem = try #require(TestCertificateAuthority.pem(certificateDER: Self.authority.rootDER))
        #expect(pem.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(PEMCertificate.der(fromPEM: pem) == Self.authority.rootDER)
        #expect(Self.authority.leafKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
    }

    @Test func theLeafAndIntermediateCarryApplesMarkers() throws {
        let intermediate = try X509Certificate(der: Self.authority.intermediateDER)
        let leaf = try X509Certificate(der: Self.authority.leafDER)
        let wwdr = ObjectIdentifierASN1("1.2.840.113635.100.6.2.1")
        let signing = ObjectIdentifierASN1("1.2.840.113635.100.6.11.1")
        #expect(intermediate.hasExtension(wwdr) && !intermediate.hasExtension(signing))
        #expect(leaf.hasExtension(signing) && !leaf.hasExtension(wwdr))
        #expect(leaf.validity.contains(Self.now))
    }
}
