import COpenSSL
import JSON

/// Apple's side of the Server API's JWT: what it refuses with 401. Used by the stand-in (so
/// tests meet Apple's rules, not the client's idea of them) and by the token builder's tests.
public struct AppStoreServerTokenCheck: Sendable {
    public let issuerId: String
    public let keyId: String
    public let bundleId: String
    private let publicKey: PublicKey

    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public let detail: String
        public var description: String { detail }
    }

    /// - Parameter publicKeyPEM: the key's public half (`AppStoreServerKey.publicKeyPEM`).
    public init(issuerId: String, keyId: String, bundleId: String, publicKeyPEM: String) throws(Refusal) {
        let parsed: OpaquePointer? = publicKeyPEM.withCString { pem in
            guard let bio = BIO_new_mem_buf(pem, -1) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let parsed else { throw Refusal(detail: "not a PEM public key: \(OpenSSLErrors.drain())") }
        let key = PublicKey(owning: parsed)
        guard key.isP256 else { throw Refusal(detail: "not an EC P-256 public key") }
        self.issuerId = issuerId
        self.keyId = keyId
        self.bundleId = bundleId
        publicKey = key
    }

    /// Checks `token` at `nowMillis`; throws the first rule it breaks.
    public func check(_ token: String, nowMillis: Int64) throws(Refusal) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { throw Refusal(detail: "not a compact JWS (three segments)") }
        guard let headerBytes = Self.decode(parts[0]), let header = try? JSONValue.parse(headerBytes),
            header.objectValue != nil
        else { throw Refusal(detail: "header is not base64url JSON") }
        guard let claimBytes = Self.decode(parts[1]), let claims = try? JSONValue.parse(claimBytes),
            claims.objectValue != nil
        else { throw Refusal(detail: "claims are not base64url JSON") }
        guard header["alg"]?.stringValue == "ES256" else { throw Refusal(detail: "alg is not ES256") }
        guard header["kid"]?.stringValue == keyId else { throw Refusal(detail: "kid is not the key's id") }
        if let typ = header["typ"], typ.stringValue != "JWT" { throw Refusal(detail: "typ is not JWT") }
        guard let signature = Self.decode(parts[2]), signature.count == 64 else {
            throw Refusal(detail: "signature is not a 64-byte ES256 signature")
        }
        let digest = Self.sha256(Array((parts[0] + "." + parts[1]).utf8))
        do {
            try signature.withUnsafeBufferPointer { raw throws(VerificationError) in
                try digest.withUnsafeBufferPointer { d throws(VerificationError) in
                    try publicKey.verifyES256(rawSignature: raw, digest: d)
                }
            }
        } catch { throw Refusal(detail: "signature does not verify with the key") }
        guard claims["aud"]?.stringValue == AppStoreServerToken.audience else {
            throw Refusal(detail: "aud is not \(AppStoreServerToken.audience)")
        }
        guard claims["iss"]?.stringValue == issuerId else { throw Refusal(detail: "iss is not the issuer id") }
        guard claims["bid"]?.stringValue == bundleId else { throw Refusal(detail: "bid is not the bundle id") }
        guard let expires = claims["exp"]?.int64Value else { throw Refusal(detail: "no numeric exp") }
        let now = nowMillis / 1000
        guard expires > now else { throw Refusal(detail: "expired") }
        // Python's library sends no iat; Apple then bounds exp from now.
        let issued = claims["iat"]?.int64Value ?? now
        guard issued <= now + 60 else { throw Refusal(detail: "iat is in the future") }
        guard expires - issued <= AppStoreServerToken.maximumLifetimeSeconds else {
            throw Refusal(detail: "exp is more than 60 minutes after iat")
        }
    }

    private static func decode(_ segment: String) -> [UInt8]? {
        var text = segment
        return text.withUTF8 { Base64.decodeURL($0) }
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBufferPointer { input in
            EVP_Digest(input.baseAddress, input.count, &out, &length, EVP_sha256(), nil) == 1
        }
        guard ok, length == 32 else { OpenSSLErrors.fatal("SHA-256") }
        return out
    }
}
