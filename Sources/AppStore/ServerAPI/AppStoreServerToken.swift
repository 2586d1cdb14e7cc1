import JSON

/// Builds the JWT every App Store Server API request carries ("Generating JSON Web Tokens for
/// API requests"): header `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, claims `iss`, `iat`,
/// `exp`, `aud: "appstoreconnect-v1"`, `bid`. Apple asks for a fresh token per request, so
/// nothing is cached: each `token(nowMillis:)` is signed anew.
public struct AppStoreServerToken: Sendable {
    public static let audience = "appstoreconnect-v1"
    /// Apple refuses a token whose `exp` is more than 60 minutes after `iat`.
    public static let maximumLifetimeSeconds: Int64 = 3600
    /// What Apple's own libraries use: short enough that a leaked token is soon useless, long
    /// enough for a slow request and some clock skew.
    public static let defaultLifetimeSeconds: Int64 = 300

    public let key: AppStoreServerKey
    public let bundleId: String
    public let lifetimeSeconds: Int64

    /// - Parameter lifetimeSeconds: clamped to 1…3600, so no token Apple refuses for its
    ///   lifetime can be built.
    public init(key: AppStoreServerKey, bundleId: String, lifetimeSeconds: Int64 = defaultLifetimeSeconds) {
        self.key = key
        self.bundleId = bundleId
        self.lifetimeSeconds = min(max(1, lifetimeSeconds), Self.maximumLifetimeSeconds)
    }

    /// A signed token issued at `nowMillis` (epoch ms; JWT times are whole seconds).
    public func token(nowMillis: Int64) -> String {
        let issuedAt = nowMillis / 1000
        var header = JSONWriter(capacity: 64)
        header.beginObject()
        header.key("alg")
        header.string("ES256")
        header.key("kid")
        header.string(key.keyId)
        header.key("typ")
        header.string("JWT")
        header.endObject()
        var claims = JSONWriter(capacity: 160)
        claims.beginObject()
        claims.key("iss")
        claims.string(key.issuerId)
        claims.key("iat")
        claims.int(issuedAt)
        claims.key("exp")
        claims.int(issuedAt + lifetimeSeconds)
        claims.key("aud")
        claims.string(Self.audience)
        claims.key("bid")
        claims.string(bundleId)
        claims.endObject()
        return key.signer.sign(payload: claims.bytes, header: header.bytes)
    }
}
