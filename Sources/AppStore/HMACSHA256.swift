import COpenSSL

/// HMAC-SHA256 for the other targets (COpenSSL is this target's alone): the Standard Webhooks
/// signature of each webhook attempt.
public enum HMACSHA256 {
    /// The 32-byte MAC of `message` under `key`, through OpenSSL's one-shot `HMAC`.
    public static func authenticate(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    // A zero-length buffer may have a nil base address; OpenSSL wants a pointer.
                    var empty: UInt8 = 0
                    return withUnsafePointer(to: &empty) { fallback in
                        HMAC(
                            EVP_sha256(), UnsafeRawPointer(k.baseAddress ?? fallback), Int32(k.count),
                            m.baseAddress ?? fallback, m.count, o.baseAddress, &length) != nil
                    }
                }
            }
        }
        guard ok, length == 32 else { OpenSSLErrors.fatal("HMAC-SHA256") }
        return out
    }
}
