import Foundation
import JSON

/// Signs promotional offers with an app's In-App Purchase key (the `.p8` from App Store Connect),
/// producing what Apple's app-store-server-library produces (commit 8468d10 of
/// app-store-server-library-swift, 8b5ccdc of app-store-server-library-python):
/// - `promotionalOfferV2`: the JWS of `PromotionalOfferV2SignatureCreator`
///   (`JWSSignatureCreator.swift` / `jws_signature_creator.py`);
/// - `legacySignature`: the SKPaymentDiscount signature of `PromotionalOfferSignatureCreator`
///   (`PromotionalOfferSignatureCreator.swift` / `promotional_offer.py`).
public final class OfferSigner: Sendable {
    public let bundleId: String
    public let keyId: String
    /// Only the V2 JWS needs it (`iss`); the legacy signature names the key alone.
    public let issuerId: String?
    private let signer: JWSSigner

    /// - Parameter privateKeyPEM: the `.p8` text (PKCS#8 PEM of a P-256 key).
    public init(bundleId: String, keyId: String, issuerId: String?, privateKeyPEM: String) throws(OfferSignerError) {
        guard !bundleId.isEmpty else { throw .missingField("bundleId") }
        guard !keyId.isEmpty else { throw .missingField("keyId") }
        if let issuerId, issuerId.isEmpty { throw .missingField("issuerId") }
        let signer: JWSSigner
        do {
            signer = try JWSSigner(privateKeyPEM: privateKeyPEM, chainDER: [])
        } catch {
            throw .unreadableKey(error.detail)
        }
        // Apple's creators load the key as P256.Signing.PrivateKey (Swift) / ES256 (Python): any
        // other key would sign something Apple cannot verify, so it is refused here, at start-up.
        guard signer.isP256 else { throw .notP256 }
        self.bundleId = bundleId
        self.keyId = keyId
        self.issuerId = issuerId
        self.signer = signer
    }

    /// The promotional offer V2 signature (a compact JWS) for StoreKit 2's
    /// `Product.PurchaseOption.promotionalOffer(_:compactJWS:)`.
    ///
    /// As the library: header `alg` ES256, `kid`, `typ` JWT (PyJWT writes it sorted:
    /// `{"alg","kid","typ"}`); claims `productId`, `offerIdentifier`, `transactionId` only when
    /// given, then `bid`, `iss`, `aud` "promotional-offer", `iat` (whole seconds) and `nonce` (a
    /// fresh UUID; Python's `str(uuid4())` is lower case, Swift's `uuidString` upper case —
    /// Apple accepts either, lower case is used here), and no `exp`.
    /// - Parameters:
    ///   - nonce: a fresh UUID per signature.
    ///   - now: milliseconds since 1970 (`iat` is its whole seconds).
    public func promotionalOfferV2(
        productId: String, offerIdentifier: String, transactionId: String?, nonce: UUID, now: Int64
    ) throws(OfferSignerError) -> String {
        guard let issuerId else { throw .missingField("issuerId") }
        var header = JSONWriter(capacity: 64)
        header.beginObject()
        header.key("alg")
        header.string("ES256")
        header.key("kid")
        header.string(keyId)
        header.key("typ")
        header.string("JWT")
        header.endObject()
        var claims = JSONWriter(capacity: 256)
        claims.beginObject()
        claims.key("productId")
        claims.string(productId)
        claims.key("offerIdentifier")
        claims.string(offerIdentifier)
        if let transactionId {
            claims.key("transactionId")
            claims.string(transactionId)
        }
        claims.key("bid")
        claims.string(bundleId)
        claims.key("iss")
        claims.string(issuerId)
        claims.key("aud")
        claims.string("promotional-offer")
        claims.key("iat")
        claims.int(Self.floorSeconds(now))
        claims.key("nonce")
        claims.string(nonce.uuidString.lowercased())
        claims.endObject()
        return signer.sign(payload: claims.bytes, header: header.bytes)
    }

    /// The legacy (StoreKit 1 `SKPaymentDiscount`, StoreKit 2 `promotionalOffer(offerID:keyID:
    /// nonce:signature:timestamp:)`) signature: ECDSA with SHA-256 over `legacyPayload`, the DER
    /// signature in standard base64 — exactly `PromotionalOfferSignatureCreator.createSignature`.
    public func legacySignature(
        productIdentifier: String, offerIdentifier: String, applicationUsername: String, nonce: UUID, timestamp: Int64
    ) -> LegacyOfferSignature {
        let payload = legacyPayload(
            productIdentifier: productIdentifier, offerIdentifier: offerIdentifier,
            applicationUsername: applicationUsername, nonce: nonce, timestamp: timestamp)
        let signature = signer.derSignature(over: Array(payload.utf8))
        return LegacyOfferSignature(
            keyIdentifier: keyId, nonce: nonce.uuidString.lowercased(), timestamp: timestamp,
            signature: JWSSigner.base64(signature))
    }

    /// The string the legacy signature signs, as the libraries build it:
    /// `bundleId ⁣ keyId ⁣ productIdentifier ⁣ offerIdentifier ⁣ applicationUsername.lowercased()
    /// ⁣ nonce (lower case) ⁣ timestamp (ms, decimal)`, joined by U+2063 INVISIBLE SEPARATOR and
    /// signed as UTF-8 (Swift: `appAccountToken.lowercased()`, `nonce.uuidString.lowercased()`;
    /// Python: `application_username.lower()`, `str(nonce).lower()`, `payload.encode('utf-8')`).
    public func legacyPayload(
        productIdentifier: String, offerIdentifier: String, applicationUsername: String, nonce: UUID, timestamp: Int64
    ) -> String {
        [
            bundleId, keyId, productIdentifier, offerIdentifier, applicationUsername.lowercased(),
            nonce.uuidString.lowercased(), String(timestamp),
        ].joined(separator: "\u{2063}")
    }

    /// `iat` in whole seconds, rounded down as PyJWT's `timegm(utctimetuple())` does.
    static func floorSeconds(_ millis: Int64) -> Int64 {
        millis >= 0 ? millis / 1000 : (millis - 999) / 1000
    }
}

/// What an app needs for the legacy promotional offer (the fields of `SKPaymentDiscount`).
public struct LegacyOfferSignature: Sendable, Hashable {
    public let keyIdentifier: String
    /// Lower-case UUID, exactly as signed.
    public let nonce: String
    /// Milliseconds since 1970, as signed; Apple honours the offer for 24 hours from it.
    public let timestamp: Int64
    /// Standard base64 of the DER ECDSA signature.
    public let signature: String
}

/// Why an offer signer cannot be built or cannot sign.
public enum OfferSignerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key text is not a PEM private key OpenSSL can read.
    case unreadableKey(String)
    /// The key reads, but it is not an EC key on P-256.
    case notP256
    /// An id the signature needs is empty or absent.
    case missingField(String)

    public var description: String {
        switch self {
        case .unreadableKey(let detail): "the private key is not a readable PEM private key (\(detail))"
        case .notP256: "the private key is not a P-256 (ES256) key; App Store Connect's .p8 keys are"
        case .missingField(let field): "\(field) is required to sign offers"
        }
    }
}
