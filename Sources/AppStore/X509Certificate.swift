import COpenSSL
import Glibc

/// Owns one `X509*`; every use of the raw pointer stays inside this class (pitfall 7).
package final class X509Certificate: @unchecked Sendable {
    fileprivate let raw: OpaquePointer

    /// Parses DER; trailing bytes are rejected.
    package init(der: [UInt8]) throws(VerificationError) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            var p = buf.baseAddress
            guard let x = d2i_X509(nil, &p, buf.count) else { return nil }
            if p != buf.baseAddress! + buf.count {
                X509_free(x)
                return nil
            }
            return x
        }
        guard let parsed else { throw OpenSSLErrors.certificate("not a DER certificate") }
        raw = parsed
    }

    deinit { X509_free(raw) }

    func hasExtension(_ oid: ObjectIdentifierASN1) -> Bool {
        oid.withRaw { X509_get_ext_by_OBJ(raw, $0, -1) >= 0 }
    }

    /// notBefore / notAfter as seconds since the Unix epoch.
    var validity: ClosedRange<Int64> { withExtendedLifetime(self) { Self.validity(of: raw) } }

    /// Validity of a borrowed `X509*` (only while its owner is alive).
    static func validity(of x: OpaquePointer) -> ClosedRange<Int64> {
        let from = seconds(X509_get0_notBefore(x))
        return from...max(from, seconds(X509_get0_notAfter(x)))
    }

    private static func seconds(_ t: UnsafePointer<ASN1_TIME>?) -> Int64 {
        var tm = Glibc.tm()
        guard let t, ASN1_TIME_to_tm(t, &tm) == 1 else { return 0 }
        return Int64(timegm(&tm))
    }

    /// The certificate's public key, owned separately so it outlives this certificate.
    func publicKey() throws(VerificationError) -> PublicKey {
        guard let key = X509_get_pubkey(raw) else { throw OpenSSLErrors.certificate("no public key") }
        return PublicKey(owning: key)
    }

    package func withRaw<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(raw) }
    }

    /// DER encoding (for tests and the signer).
    var der: [UInt8] {
        let n = i2d_X509(raw, nil)
        guard n > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: Int(n))
        out.withUnsafeMutableBufferPointer { buf in
            var p = buf.baseAddress
            _ = i2d_X509(raw, &p)
        }
        return out
    }
}

/// An ASN.1 OBJECT (OID) parsed once.
final class ObjectIdentifierASN1: @unchecked Sendable {
    private let raw: OpaquePointer
    init(_ dotted: String) {
        guard let o = OBJ_txt2obj(dotted, 1) else { OpenSSLErrors.fatal("OBJ_txt2obj(\(dotted))") }
        raw = o
    }
    deinit { ASN1_OBJECT_free(raw) }
    func withRaw<R>(_ body: (OpaquePointer) -> R) -> R { withExtendedLifetime(self) { body(raw) } }
}
