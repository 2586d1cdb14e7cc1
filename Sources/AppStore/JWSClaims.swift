import JSON

/// The claims of a compact JWS read without checking its signature: for a payload verified
/// already, when stored, to find the appAccountToken it carries (a notification's nested
/// transaction or renewal info), so the stored copy can be sealed with that token's key.
public enum JWSClaims {
    /// The payload segment as JSON; nil when `jws` is not three segments or not JSON.
    public static func of(_ jws: String) -> JSONValue? {
        let segments = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else { return nil }
        var segment = String(segments[1])
        guard let bytes = segment.withUTF8({ Base64.decodeURL($0) }) else { return nil }
        return try? JSONValue.parse(bytes)
    }

    /// The appAccountToken of a signed transaction or renewal info, or of the one a signed
    /// notification carries (its transaction first), lowercased; nil when there is none.
    public static func appAccountToken(in jws: String) -> String? {
        guard let claims = of(jws) else { return nil }
        if let token = claims["appAccountToken"]?.stringValue { return token.lowercased() }
        for nested in ["signedTransactionInfo", "signedRenewalInfo"] {
            if let inner = claims["data"]?[nested]?.stringValue, let token = of(inner)?["appAccountToken"]?.stringValue
            {
                return token.lowercased()
            }
        }
        return nil
    }
}
