import COpenSSL

/// Mints ES256 compact JWS with an x5c chain, as Apple does (for tests and benchmarks).
public final class JWSSigner: @unchecked Sendable {
    private let key: OpaquePointer  // EVP_PKEY*
    private let x5c: [String]

    /// - Parameters:
    ///   - privateKeyPEM: a P-256 key, PEM (PKCS#8 or SEC1 "EC PRIVATE KEY").
    ///   - chainDER: the certificates for `x5c`, leaf first (any count, so tests can mint bad chains).
    public init(privateKeyPEM: String, chainDER: [[UInt8]]) throws(VerificationSetupError) {
        let parsed: OpaquePointer? = privateKeyPEM.withCString { pem in
            guard let bio = BIO_new_mem_buf(pem, -1) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let parsed else { throw VerificationSetupError("not a PEM private key: \(OpenSSLErrors.drain())") }
        key = parsed
        x5c = chainDER.map { Base64.encode($0, url: false) }
    }

    deinit { EVP_PKEY_free(key) }

    /// The public half, as a PEM `PUBLIC KEY` (what Apple holds for a `.p8`; the Server API
    /// stand-in checks tokens with it).
    public var publicKeyPEM: String {
        withExtendedLifetime(self) {
            guard let bio = BIO_new(BIO_s_mem()) else { OpenSSLErrors.fatal("BIO_new") }
            defer { BIO_free(bio) }
            guard PEM_write_bio_PUBKEY(bio, key) == 1 else { OpenSSLErrors.fatal("PEM_write_bio_PUBKEY") }
            var data: UnsafeMutablePointer<CChar>? = nil
            let length = COpenSSL_BIO_get_mem_data(bio, &data)
            guard length > 0, let data else { OpenSSLErrors.fatal("BIO_get_mem_data") }
            return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        }
    }

    /// The protected header Apple uses: `{"alg":"ES256","x5c":[…]}`.
    public var defaultHeader: [UInt8] {
        var header = #"{"alg":"ES256","x5c":["#
        header += x5c.map { "\"\($0)\"" }.joined(separator: ",")
        header += "]}"
        return Array(header.utf8)
    }

    /// Signs `payload` (JSON bytes) under `header` (default: `defaultHeader`) → `header.payload.signature`.
    public func sign(payload: [UInt8], header: [UInt8]? = nil) -> String {
        let signingInput = Base64.encode(header ?? defaultHeader, url: true) + "." + Base64.encode(payload, url: true)
        return signingInput + "." + Base64.encode(signature(over: Array(signingInput.utf8)), url: true)
    }

    /// Raw R‖S ES256 signature over `message` (what a JWS carries).
    public func signature(over message: [UInt8]) -> [UInt8] {
        guard let raw = ECDSASignature.raw(fromDER: derSignature(over: message)) else {
            OpenSSLErrors.fatal("ECDSA signature conversion")
        }
        return raw
    }

    /// ECDSA-SHA256 signature over `message` in DER (what the legacy promotional-offer
    /// signature carries, base64-encoded).
    public func derSignature(over message: [UInt8]) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { OpenSSLErrors.fatal("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        return withExtendedLifetime(self) {
            guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1 else {
                OpenSSLErrors.fatal("EVP_DigestSignInit")
            }
            var length = 0
            guard EVP_DigestSign(ctx, nil, &length, message, message.count) == 1 else {
                OpenSSLErrors.fatal("EVP_DigestSign")
            }
            var der = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(ctx, &der, &length, message, message.count) == 1 else {
                OpenSSLErrors.fatal("EVP_DigestSign")
            }
            return Array(der.prefix(length))
        }
    }

    /// True if the key is an EC key on P-256, the only curve ES256 signs with (an App Store
    /// Connect `.p8` of another kind would sign tokens Apple refuses, so loaders check it first).
    public var isP256: Bool {
        // PublicKey owns what it is given and frees it: hand it a reference of its own.
        guard EVP_PKEY_up_ref(key) == 1 else { return false }
        return PublicKey(owning: key).isP256
    }

    /// base64url without padding (JWS segments), exposed for tests that hand-craft tokens.
    public static func base64URL(_ bytes: some Collection<UInt8>) -> String { Base64.encode(bytes, url: true) }
    /// Standard base64 (x5c entries).
    public static func base64(_ bytes: some Collection<UInt8>) -> String { Base64.encode(bytes, url: false) }
}

/// PEM → DER for certificates (tests load the test PKI's `.pem` files).
public enum PEMCertificate {
    public static func der(fromPEM pem: String) -> [UInt8]? {
        let cert: X509Certificate? = pem.withCString { text in
            guard let bio = BIO_new_mem_buf(text, -1) else { return nil }
            defer { BIO_free(bio) }
            guard let x = PEM_read_bio_X509(bio, nil, nil, nil) else { return nil }
            defer { X509_free(x) }
            let n = i2d_X509(x, nil)
            guard n > 0 else { return nil }
            var out = [UInt8](repeating: 0, count: Int(n))
            out.withUnsafeMutableBufferPointer { buf in
                var p = buf.baseAddress
                _ = i2d_X509(x, &p)
            }
            return try? X509Certificate(der: out)
        }
        return cert?.der
    }
}
