import Foundation
import JSON
import Testing

@testable import AppStore

/// Apple's own vectors (docs/FORMATS.md §5) give the verdicts Apple's libraries give.
@Suite struct AppleVectorsTests {
    let testCA: [UInt8]
    init() throws { testCA = try Fixture.bytes("test-resources/certs/testCA.der") }

    func verifier(
        _ environments: Set<String> = ["Sandbox"], bundleId: String = "com.example", appAppleId: Int64? = 1234
    )
        throws -> SignedDataVerifier
    {
        try SignedDataVerifier(
            trustedRootsDER: [testCA],
            apps: [AppIdentity(bundleId: bundleId, appAppleId: appAppleId, environments: environments)])
    }

    func mock(_ name: String) throws -> String { try Fixture.text("test-resources/mock_signed_data/\(name)") }

    func reason(_ body: () throws -> Void) -> VerificationError.Reason? { rejection(body) }

    @Test func sandboxVerifierAcceptsMockTransactionRenewalAndNotification() throws {
        let v = try verifier()
        let transaction = try v.verifyTransaction(try mock("transactionInfo"))
        #expect(transaction.bundleId == "com.example")
        #expect(transaction.environment == "Sandbox")
        #expect(transaction.signedDate == 1_672_956_154_000)
        let renewal = try v.verifyRenewalInfo(try mock("renewalInfo"))
        #expect(renewal.environment == "Sandbox")
        let notification = try v.verifyNotification(try mock("testNotification"))
        #expect(notification.payload.notificationType == "TEST")
        #expect(notification.payload.data?.appAppleId == 1234)
        #expect(notification.transaction == nil)
    }

    @Test func productionVerifierRejectsSandboxDataAsWrongEnvironment() throws {
        let v = try verifier(["Production"])
        #expect(reason { _ = try v.verifyTransaction(try! mock("transactionInfo")) } == .wrongEnvironment)
        #expect(reason { _ = try v.verifyRenewalInfo(try! mock("renewalInfo")) } == .wrongEnvironment)
        #expect(reason { _ = try v.verifyNotification(try! mock("testNotification")) } == .wrongEnvironment)
    }

    @Test func otherBundleIdIsAnUnknownApp() throws {
        let v = try verifier(bundleId: "com.examplex")
        #expect(reason { _ = try v.verifyTransaction(try! mock("transactionInfo")) } == .unknownApp)
        #expect(reason { _ = try v.verifyNotification(try! mock("testNotification")) } == .unknownApp)
        #expect(reason { _ = try verifier().verifyNotification(try! mock("wrongBundleId")) } == .unknownApp)
    }

    @Test func productionVerifierWithOtherAppAppleIdRejectsNotificationAsUnknownApp() throws {
        let v = try verifier(["Production"], appAppleId: 1235)
        #expect(reason { _ = try v.verifyNotification(try! mock("testNotification")) } == .unknownApp)
    }

    @Test func missingX5cAndBadSegmentCountsAreMalformed() throws {
        let v = try verifier()
        #expect(reason { _ = try v.verifyNotification(try! mock("missingX5CHeaderClaim")) } == .malformed)
        #expect(reason { _ = try v.verifyNotification("a.b.c") } == .malformed)
        #expect(reason { _ = try v.verifyNotification("a.b.c.d") } == .malformed)
        #expect(reason { _ = try v.verifyNotification("") } == .malformed)
    }

    @Test func productionWithoutAppAppleIdIsASetupError() {
        #expect(throws: VerificationSetupError.self) {
            _ = try SignedDataVerifier(
                trustedRootsDER: [testCA],
                apps: [AppIdentity(bundleId: "com.example", appAppleId: nil, environments: ["Production"])])
        }
    }

    @Test func realAppleNotificationVerifiesWithBundledG3AtItsSignedDate() throws {
        let v = try SignedDataVerifier(apps: [
            AppIdentity(
                bundleId: "com.loki-project.loki-messenger", appAppleId: nil,
                environments: ["Sandbox"])
        ])
        let n = try v.verifyNotification(try Fixture.text("real-signed/sandbox-TEST-notification-2025-09-05.jws"))
        #expect(n.payload.notificationType == "TEST")
        #expect(n.payload.notificationUUID == "592751ef-c1b8-47fc-929e-d62dee66df4c")
        #expect(n.payload.signedDate == 1_757_035_472_686)
        #expect(n.payload.data?.bundleId == "com.loki-project.loki-messenger")
    }

    @Test func realAppleLeafHasExpiredByNow() throws {
        let jws = try Fixture.text("real-signed/sandbox-TEST-notification-2025-09-05.jws")
        let header = try JSONValue.parse(Base64.decodeURL(jws.split(separator: ".")[0]) ?? [])
        let x5cValues = try #require(header["x5c"]?.arrayValue)
        let x5c = x5cValues.compactMap { $0.stringValue }
        let leafDER = try #require(Base64.decodeStandard(x5c[0]))
        let intermediateDER = try #require(Base64.decodeStandard(x5c[1]))
        let leaf = try X509Certificate(der: leafDER)
        let intermediate = try X509Certificate(der: intermediateDER)
        let store = try TrustStore(rootsDER: [AppleRoots.g3DER])
        _ = try store.validate(leaf: leaf, intermediate: intermediate, at: 1_757_035_472)
        let now = Int64(Date().timeIntervalSince1970)
        #expect(throws: VerificationError(.invalidChain, "certificate has expired (leaf)")) {
            _ = try store.validate(leaf: leaf, intermediate: intermediate, at: now)
        }
    }

    @Test func xcodeDataIsAcceptedOnlyWhenXcodeIsConfigured() throws {
        let jws = try Fixture.text("test-resources/xcode/xcode-signed-transaction")
        let renewalJWS = try Fixture.text("test-resources/xcode/xcode-signed-renewal-info")
        let xcode = try verifier(["Xcode"], bundleId: "com.example.naturelab.backyardbirds.example")
        let t = try xcode.verifyTransaction(jws)
        #expect(t.purchaseDate == 1_697_679_936_049)
        #expect(t.signedDate == 1_697_679_936_056)
        #expect(t.transactionId == "0")
        #expect(t.isUpgraded == false)
        let r = try xcode.verifyRenewalInfo(renewalJWS)
        #expect(r.renewalDate == 1_700_358_336_049)
        #expect(r.autoRenewStatus == 1)
        let sandbox = try verifier(bundleId: "com.example.naturelab.backyardbirds.example")
        #expect(reason { _ = try sandbox.verifyTransaction(jws) } == .wrongEnvironment)
        #expect(reason { _ = try sandbox.verifyRenewalInfo(renewalJWS) } == .wrongEnvironment)
    }
}

extension Base64 {
    static func decodeURL(_ s: Substring) -> [UInt8]? {
        var s = String(s)
        return s.withUTF8 { decodeURL($0) }
    }
}

/// The rejection reason `body` throws, or nil when it succeeds (any other error fails the test).
func rejection(_ body: () throws -> Void) -> VerificationError.Reason? {
    do {
        try body()
        return nil
    } catch let error as VerificationError { return error.reason } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}
