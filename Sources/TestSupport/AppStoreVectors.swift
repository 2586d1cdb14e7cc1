import AppStore
import Foundation
import JSON
import Synchronization

/// Mints App Store signed data with the test PKI (`Tests/Fixtures/apple/test-pki`: testCA →
/// testIntermediate → testLeaf, carrying Apple's OIDs), so tests can build any scenario.
/// Override payload fields with `[String: JSONValue]`; `.null` removes a field.
public final class TestVectors: Sendable {
    public static let shared: TestVectors = {
        do { return try TestVectors() } catch { preconditionFailure("test PKI unusable: \(error)") }
    }()

    public static let bundleId = "com.example"
    public static let appAppleId: Int64 = 1234

    /// Repository root, found from this file's location.
    public static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// `Tests/Fixtures/apple`.
    public static let fixtures = repoRoot.appendingPathComponent("Tests/Fixtures/apple")

    /// The test root (testCA.der), to configure a verifier with.
    public let rootDER: [UInt8]
    public let leafDER: [UInt8]
    public let intermediateDER: [UInt8]
    /// Signs with testLeaf.key under x5c [testLeaf, testIntermediate, testCA].
    public let signer: JWSSigner
    private let counter = Atomic<Int64>(0)

    public init() throws {
        let pki = Self.fixtures.appendingPathComponent("test-pki")
        rootDER = Array(try Data(contentsOf: pki.appendingPathComponent("testCA.der")))
        leafDER = try Self.certificate(pki.appendingPathComponent("testLeaf.pem"))
        intermediateDER = try Self.certificate(pki.appendingPathComponent("testIntermediate.pem"))
        let key = try String(contentsOf: pki.appendingPathComponent("testLeaf.key"), encoding: .utf8)
        signer = try JWSSigner(privateKeyPEM: key, chainDER: [leafDER, intermediateDER, rootDER])
    }

    /// DER of a PEM certificate file.
    public static func certificate(_ url: URL) throws -> [UInt8] {
        let pem = try String(contentsOf: url, encoding: .utf8)
        guard let der = PEMCertificate.der(fromPEM: pem) else { throw CocoaError(.fileReadCorruptFile) }
        return der
    }

    /// A verifier trusting the test root, for `com.example` (appAppleId 1234) in `environments`.
    public func verifier(environments: Set<String> = ["Sandbox", "Production"]) -> SignedDataVerifier {
        do {
            return try SignedDataVerifier(
                trustedRootsDER: [rootDER],
                apps: [AppIdentity(bundleId: Self.bundleId, appAppleId: Self.appAppleId, environments: environments)])
        } catch { preconditionFailure("\(error)") }
    }

    public static var nowMillis: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    private func nextId() -> Int64 { 2_000_000_000 + counter.add(1, ordering: .relaxed).newValue }

    /// A Sandbox auto-renewable subscription transaction with fresh ids (its own Apple Account's
    /// `appTransactionId` too: each is another buyer), merged with `fields`.
    public func transactionPayload(_ fields: [String: JSONValue] = [:]) -> JSONValue {
        let id = nextId()
        let now = Self.nowMillis
        var p: [String: JSONValue] = [
            "transactionId": .string(String(id)), "originalTransactionId": .string(String(id)),
            "webOrderLineItemId": .string(String(id + 500_000_000)), "bundleId": .string(Self.bundleId),
            "productId": .string("com.example.monthly"), "subscriptionGroupIdentifier": .string("21000001"),
            "purchaseDate": .number(String(now - 60_000)), "originalPurchaseDate": .number(String(now - 60_000)),
            "expiresDate": .number(String(now + 30 * 86_400_000)), "quantity": .number("1"),
            "type": .string("Auto-Renewable Subscription"), "inAppOwnershipType": .string("PURCHASED"),
            "signedDate": .number(String(now)), "environment": .string("Sandbox"),
            "transactionReason": .string("PURCHASE"), "storefront": .string("USA"), "storefrontId": .string("143441"),
            "price": .number("9990"), "currency": .string("USD"),
            "appTransactionId": .string(String(704_289_570_000_000_000 + id)),
        ]
        Self.merge(fields, into: &p)
        return .object(p)
    }

    /// Renewal info for `originalTransactionId` (default: a fresh id), merged with `fields`.
    public func renewalPayload(_ fields: [String: JSONValue] = [:]) -> JSONValue {
        let now = Self.nowMillis
        var p: [String: JSONValue] = [
            "originalTransactionId": .string(String(nextId())), "autoRenewProductId": .string("com.example.monthly"),
            "productId": .string("com.example.monthly"), "autoRenewStatus": .number("1"),
            "isInBillingRetryPeriod": .bool(false), "signedDate": .number(String(now)),
            "environment": .string("Sandbox"), "recentSubscriptionStartDate": .number(String(now - 60_000)),
            "renewalDate": .number(String(now + 30 * 86_400_000)), "currency": .string("USD"),
            "renewalPrice": .number("9990"),
        ]
        Self.merge(fields, into: &p)
        return .object(p)
    }

    public func signedTransaction(_ fields: [String: JSONValue] = [:]) -> String { sign(transactionPayload(fields)) }
    public func signedRenewalInfo(_ fields: [String: JSONValue] = [:]) -> String { sign(renewalPayload(fields)) }

    /// A notification whose `data` carries a signed transaction (and renewal info) built from the
    /// given overrides; pass `transaction: nil` / `renewal: nil` to leave them out.
    public func signedNotification(
        type: String, subtype: String? = nil,
        transaction: [String: JSONValue]? = [:], renewal: [String: JSONValue]? = nil,
        data: [String: JSONValue] = [:], fields: [String: JSONValue] = [:]
    ) -> String {
        sign(
            notificationPayload(
                type: type, subtype: subtype, transaction: transaction, renewal: renewal,
                data: data, fields: fields))
    }

    public func notificationPayload(
        type: String, subtype: String? = nil,
        transaction: [String: JSONValue]? = [:], renewal: [String: JSONValue]? = nil,
        data: [String: JSONValue] = [:], fields: [String: JSONValue] = [:]
    ) -> JSONValue {
        var d: [String: JSONValue] = [
            "bundleId": .string(Self.bundleId), "bundleVersion": .string("1.0"), "environment": .string("Sandbox"),
        ]
        if let t = transaction {
            let tx = transactionPayload(t)
            d["signedTransactionInfo"] = .string(sign(tx))
            if let r = renewal {
                var link: [String: JSONValue] = [
                    "originalTransactionId": tx["originalTransactionId"] ?? .null,
                    "productId": tx["productId"] ?? .null, "environment": tx["environment"] ?? .null,
                ]
                Self.merge(r, into: &link)
                d["signedRenewalInfo"] = .string(sign(renewalPayload(link)))
            }
            d["environment"] = tx["environment"] ?? .string("Sandbox")
            d["status"] = .number("1")
        } else if let r = renewal {
            d["signedRenewalInfo"] = .string(sign(renewalPayload(r)))
        }
        if d["environment"]?.stringValue == "Production" { d["appAppleId"] = .number(String(Self.appAppleId)) }
        Self.merge(data, into: &d)
        var p: [String: JSONValue] = [
            "notificationType": .string(type), "notificationUUID": .string(UUID().uuidString.lowercased()),
            "version": .string("2.0"), "signedDate": .number(String(Self.nowMillis)), "data": .object(d),
        ]
        if let subtype { p["subtype"] = .string(subtype) }
        Self.merge(fields, into: &p)
        return .object(p)
    }

    /// An app transaction (Apple's `AppTransaction` fields) of the test app, merged with `fields`.
    public func appTransactionPayload(appTransactionId: String, _ fields: [String: JSONValue] = [:]) -> JSONValue {
        let now = Self.nowMillis
        var p: [String: JSONValue] = [
            "receiptType": .string("Sandbox"), "bundleId": .string(Self.bundleId),
            "applicationVersion": .string("1.0"), "receiptCreationDate": .number(String(now)),
            "originalPurchaseDate": .number(String(now - 86_400_000)), "originalApplicationVersion": .string("1.0"),
            "deviceVerification": .string("dGVzdA=="),
            "deviceVerificationNonce": .string(UUID().uuidString.lowercased()),
            "appTransactionId": .string(appTransactionId), "originalPlatform": .string("iOS"),
        ]
        if fields["receiptType"]?.stringValue == "Production" { p["appAppleId"] = .number(String(Self.appAppleId)) }
        Self.merge(fields, into: &p)
        return .object(p)
    }

    /// A RESCIND_CONSENT notification (Notifications 2.19): no `data`, an `appData` with the
    /// signed app transaction of `appTransactionId`. `appData` overrides its fields (a test of a
    /// mismatch), `appTransaction` the app transaction's.
    public func signedRescindConsent(
        appTransactionId: String, signedDate: Int64? = nil, appData: [String: JSONValue] = [:],
        appTransaction: [String: JSONValue] = [:]
    ) -> String {
        var data: [String: JSONValue] = [
            "bundleId": .string(Self.bundleId), "environment": .string("Sandbox"),
            "signedAppTransactionInfo": .string(
                sign(appTransactionPayload(appTransactionId: appTransactionId, appTransaction))),
        ]
        Self.merge(appData, into: &data)
        return sign(
            .object([
                "notificationType": .string("RESCIND_CONSENT"),
                "notificationUUID": .string(UUID().uuidString.lowercased()),
                "version": .string("2.0"), "signedDate": .number(String(signedDate ?? Self.nowMillis)),
                "appData": .object(data),
            ]))
    }

    /// Signs any payload with the test leaf (x5c = leaf, intermediate, root).
    public func sign(_ payload: JSONValue) -> String { signer.sign(payload: payload.serialized()) }

    private static func merge(_ fields: [String: JSONValue], into p: inout [String: JSONValue]) {
        for (k, v) in fields { p[k] = v.isNull ? nil : v }
    }
}
