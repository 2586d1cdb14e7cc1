import AppStore
import COpenSSL

/// The private CA of `iap-ledger testkit`: a P-256 root → intermediate → leaf chain built with
/// OpenSSL's X509 API, carrying Apple's OID markers (WWDR intermediate 1.2.840.113635.100.6.2.1,
/// receipt-signing leaf 1.2.840.113635.100.6.11.1), so what it signs passes `SignedDataVerifier`
/// exactly like Apple's data does once its root is trusted.
///
/// The root's subject says it is not Apple, and `isTestkitRoot` recognises it, so a configuration
/// can refuse to trust it for Production or Sandbox data. Only the leaf key is kept: without the
/// root and intermediate keys nobody can issue further certificates under this root.
public struct TestCertificateAuthority: Sendable {
    /// The root's (and only the root's) common name; `isTestkitRoot` looks for it.
    public static let rootCommonName = TestkitRoot.commonName

    public let rootDER: [UInt8]
    public let intermediateDER: [UInt8]
    public let leafDER: [UInt8]
    /// The leaf's private key, PKCS#8 PEM.
    public let leafKeyPEM: String

    public init(rootDER: [UInt8], intermediateDER: [UInt8], leafDER: [UInt8], leafKeyPEM: String) {
        self.rootDER = rootDER
        self.intermediateDER = intermediateDER
        self.leafDER = leafDER
        self.leafKeyPEM = leafKeyPEM
    }

    /// Generates fresh keys and the three certificates, valid from a day before `now` (seconds
    /// since the epoch, so a slightly slow clock elsewhere still accepts them) for `years`.
    public static func generate(now: Int64, years: Int = 10) throws(VerificationSetupError) -> TestCertificateAuthority
    {
        let rootKey = try Key.generate()
        let intermediateKey = try Key.generate()
        let leafKey = try Key.generate()
        let from = now - 86_400
        let until = now + Int64(years) * 365 * 86_400
        let root = try Certificate.build(
            subject: rootCommonName, key: rootKey, issuer: nil, issuerKey: rootKey, from: from, until: until,
            extensions: [
                ("basicConstraints", "critical,CA:TRUE"), ("keyUsage", "critical,keyCertSign,cRLSign"),
                ("subjectKeyIdentifier", "hash"),
            ])
        defer { X509_free(root) }
        let intermediate = try Certificate.build(
            subject: "iap-ledger testkit intermediate (not Apple WWDR)", key: intermediateKey, issuer: root,
            issuerKey: rootKey, from: from, until: until,
            extensions: [
                ("basicConstraints", "critical,CA:TRUE,pathlen:0"), ("keyUsage", "critical,keyCertSign,cRLSign"),
                ("subjectKeyIdentifier", "hash"), ("authorityKeyIdentifier", "keyid:always"),
                // Apple's marker has an ASN.1 NULL as its value, like the WWDR intermediates.
                ("1.2.840.113635.100.6.2.1", "DER:0500"),
            ])
        defer { X509_free(intermediate) }
        let leaf = try Certificate.build(
            subject: "iap-ledger testkit signing leaf (not Apple)", key: leafKey, issuer: intermediate,
            issuerKey: intermediateKey, from: from, until: until,
            extensions: [
                ("basicConstraints", "critical,CA:FALSE"), ("keyUsage", "critical,digitalSignature"),
                ("subjectKeyIdentifier", "hash"), ("authorityKeyIdentifier", "keyid:always"),
                ("1.2.840.113635.100.6.11.1", "DER:0500"),
            ])
        defer { X509_free(leaf) }
        return TestCertificateAuthority(
            rootDER: try Certificate.der(root), intermediateDER: try Certificate.der(intermediate),
            leafDER: try Certificate.der(leaf), leafKeyPEM: try leafKey.pem())
    }

    /// A fresh P-256 key as PKCS#8 PEM, the format of App Store Connect's `.p8` keys: the test
    /// store's own In-App Purchase key, which its Server API stand-in checks tokens with.
    public static func generateKeyPEM() throws(VerificationSetupError) -> String { try Key.generate().pem() }

    /// Signs as Apple does: ES256 with x5c = [leaf, intermediate, root].
    public func signer() throws(VerificationSetupError) -> JWSSigner {
        try JWSSigner(privateKeyPEM: leafKeyPEM, chainDER: [leafDER, intermediateDER, rootDER])
    }

    /// Whether `der` is a root made by `generate`: AppStore's `TestkitRoot`, which the service's
    /// configuration asks too.
    public static func isTestkitRoot(der: [UInt8]) -> Bool { TestkitRoot.recognises(der: der) }

    /// A DER certificate as PEM text (for people reading the files).
    public static func pem(certificateDER der: [UInt8]) -> String? {
        guard let certificate = try? X509Certificate(der: der) else { return nil }
        return certificate.withRaw { raw -> String? in
            MemoryBIO.text { PEM_write_bio_X509($0, raw) == 1 }
        }
    }

    /// An owned EVP_PKEY.
    private final class Key {
        let raw: OpaquePointer
        init(raw: OpaquePointer) { self.raw = raw }
        deinit { EVP_PKEY_free(raw) }

        static func generate() throws(VerificationSetupError) -> Key {
            guard let raw = COpenSSL_generate_P256() else {
                throw VerificationSetupError("cannot generate a P-256 key: \(OpenSSLErrors.drain())")
            }
            return Key(raw: raw)
        }

        func pem() throws(VerificationSetupError) -> String {
            let text = withExtendedLifetime(self) {
                MemoryBIO.text { PEM_write_bio_PrivateKey($0, raw, nil, nil, 0, nil, nil) == 1 }
            }
            guard let text else { throw VerificationSetupError("cannot write a private key: \(OpenSSLErrors.drain())") }
            return text
        }
    }

    private enum Certificate {
        /// A signed X.509 v3 certificate (the caller frees it). `issuer` nil: self-signed.
        static func build(
            subject: String, key: Key, issuer: OpaquePointer?, issuerKey: Key, from: Int64, until: Int64,
            extensions: [(String, String)]
        ) throws(VerificationSetupError) -> OpaquePointer {
            guard let x = X509_new() else { OpenSSLErrors.fatal("X509_new") }
            let built = withExtendedLifetime((key, issuerKey)) { () -> Bool in
                guard X509_set_version(x, 2) == 1,  // v3
                    ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), UInt64.random(in: 1...(UInt64.max >> 1))) == 1,
                    ASN1_TIME_set(X509_getm_notBefore(x), time_t(from)) != nil,
                    ASN1_TIME_set(X509_getm_notAfter(x), time_t(until)) != nil,
                    X509_set_pubkey(x, key.raw) == 1,
                    let name = X509_get_subject_name(x),
                    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, subject, -1, -1, 0) == 1,
                    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, "iap-ledger testkit", -1, -1, 0) == 1,
                    X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0) } ?? name) == 1
                else { return false }
                var context = X509V3_CTX()
                COpenSSL_X509V3_set_ctx_nodb(&context)
                X509V3_set_ctx(&context, issuer ?? x, x, nil, nil, 0)
                for (name, value) in extensions {
                    guard let ext = X509V3_EXT_nconf(nil, &context, name, value) else { return false }
                    defer { X509_EXTENSION_free(ext) }
                    guard X509_add_ext(x, ext, -1) == 1 else { return false }
                }
                return X509_sign(x, issuerKey.raw, EVP_sha256()) > 0
            }
            guard built else {
                X509_free(x)
                throw VerificationSetupError("cannot build the certificate \"\(subject)\": \(OpenSSLErrors.drain())")
            }
            return x
        }

        static func der(_ x: OpaquePointer) throws(VerificationSetupError) -> [UInt8] {
            guard let out = DEREncoding.bytes({ i2d_X509(x, $0) }) else {
                throw VerificationSetupError("cannot encode a certificate: \(OpenSSLErrors.drain())")
            }
            return out
        }
    }

    /// A memory BIO written by `write`, read back as text.
    private enum MemoryBIO {
        static func text(_ write: (OpaquePointer) -> Bool) -> String? {
            guard let bio = BIO_new(BIO_s_mem()) else { OpenSSLErrors.fatal("BIO_new") }
            defer { BIO_free(bio) }
            guard write(bio) else { return nil }
            var data: UnsafeMutablePointer<CChar>? = nil
            let length = COpenSSL_BIO_get_mem_data(bio, &data)
            guard length > 0, let data else { return nil }
            return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        }
    }
}
