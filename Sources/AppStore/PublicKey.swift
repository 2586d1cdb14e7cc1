import COpenSSL
import Synchronization

/// Owns one `EVP_PKEY*` (a leaf's P-256 key) and checks ES256 signatures with it.
/// Thread-safe: OpenSSL 3 allows concurrent use of one EVP_PKEY from separate contexts; each
/// verification borrows its own verify-initialised `EVP_PKEY_CTX` from `idleContexts`.
final class PublicKey: @unchecked Sendable {
    private let raw: OpaquePointer
    /// Verify-initialised contexts for this key, reused: `EVP_PKEY_verify_init` fetches the
    /// ECDSA implementation from the provider on every call (OpenSSL 3.0), which cost ~10 % of
    /// a warm-cache verification; `openssl speed` also initialises once and verifies in a loop.
    private let idleContexts = Mutex<[IdleContext]>([])
    private struct IdleContext: @unchecked Sendable { let ctx: OpaquePointer }
    private static let maxIdleContexts = 64

    init(owning raw: OpaquePointer) { self.raw = raw }
    deinit {
        for idle in idleContexts.withLock({ $0 }) { EVP_PKEY_CTX_free(idle.ctx) }
        EVP_PKEY_free(raw)
    }

    /// True if the key is an EC key on P-256 (what ES256 requires).
    var isP256: Bool {
        guard EVP_PKEY_get_base_id(raw) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var len = 0
        guard EVP_PKEY_get_group_name(raw, &name, name.count, &len) == 1 else { return false }
        let group = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return group == "prime256v1" || group == "P-256"
    }

    /// Verifies a JWS ES256 signature: `rawSignature` is R‖S (64 bytes), `digest` the SHA-256 (32
    /// bytes) of the ASCII `header.payload` signing input.
    func verifyES256(rawSignature: UnsafeBufferPointer<UInt8>, digest: UnsafeBufferPointer<UInt8>)
        throws(VerificationError)
    {
        guard rawSignature.count == 64 else {
            throw VerificationError(.signatureMismatch, "ES256 signature must be 64 bytes, got \(rawSignature.count)")
        }
        precondition(digest.count == 32)
        // Verifying the digest with EVP_PKEY_verify is measurably cheaper than the EVP_DigestVerify
        // path, which fetches the digest from the provider on every call.
        let ok = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 80) { der -> Bool in
            let derLength = ECDSASignature.der(fromRaw: rawSignature, into: der)
            guard derLength > 0 else { return false }
            return verify(der: UnsafeBufferPointer(rebasing: der[0..<derLength]), digest: digest)
        }
        guard ok else { throw OpenSSLErrors.signature("ES256 signature does not verify with the leaf key") }
    }

    private func verify(der: UnsafeBufferPointer<UInt8>, digest: UnsafeBufferPointer<UInt8>) -> Bool {
        withExtendedLifetime(self) { () -> Bool in
            let ctx: OpaquePointer
            if let idle = idleContexts.withLock({ $0.popLast() }) {
                ctx = idle.ctx
            } else {
                guard let fresh = EVP_PKEY_CTX_new_from_pkey(nil, raw, nil) else {
                    OpenSSLErrors.fatal("EVP_PKEY_CTX_new")
                }
                guard EVP_PKEY_verify_init(fresh) == 1 else {
                    EVP_PKEY_CTX_free(fresh)
                    return false
                }
                ctx = fresh
            }
            let verified = EVP_PKEY_verify(ctx, der.baseAddress, der.count, digest.baseAddress, 32)
            // A context that hit an internal error (< 0) is not trusted again.
            let keep =
                verified >= 0
                && idleContexts.withLock { idle in
                    guard idle.count < Self.maxIdleContexts else { return false }
                    idle.append(IdleContext(ctx: ctx))
                    return true
                }
            if !keep { EVP_PKEY_CTX_free(ctx) }
            return verified == 1
        }
    }
}

/// R‖S ⇄ DER conversion of ECDSA signatures through OpenSSL's ECDSA_SIG.
enum ECDSASignature {
    /// Writes the DER form of a 64-byte R‖S into `out`; returns its length, or 0.
    static func der(fromRaw raw: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        guard let sig = ECDSA_SIG_new() else { OpenSSLErrors.fatal("ECDSA_SIG_new") }
        defer { ECDSA_SIG_free(sig) }
        guard let r = BN_bin2bn(raw.baseAddress, 32, nil) else { return 0 }
        guard let s = BN_bin2bn(raw.baseAddress! + 32, 32, nil) else {
            BN_free(r)
            return 0
        }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return 0
        }
        let n = Int(i2d_ECDSA_SIG(sig, nil))
        guard n > 0, n <= out.count else { return 0 }
        var p = out.baseAddress
        return Int(i2d_ECDSA_SIG(sig, &p))
    }

    /// Converts a DER ECDSA signature to R‖S of `width` bytes each (for signing).
    static func raw(fromDER der: [UInt8], width: Int = 32) -> [UInt8]? {
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            var p = buf.baseAddress
            return d2i_ECDSA_SIG(nil, &p, buf.count)
        }
        guard let sig else { return nil }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer? = nil
        var s: OpaquePointer? = nil
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 2 * width)
        let ok = out.withUnsafeMutableBufferPointer { buf in
            BN_bn2binpad(r, buf.baseAddress, Int32(width)) == Int32(width)
                && BN_bn2binpad(s, buf.baseAddress! + width, Int32(width)) == Int32(width)
        }
        return ok ? out : nil
    }
}
