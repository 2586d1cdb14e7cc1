import COpenSSL

/// The bytes of a `trustedRoots` file as the verifier wants them (DER). Operators get roots in
/// either form (Apple ships `.cer` DER files; `openssl` and most tools write PEM), so a PEM file
/// is converted here, through OpenSSL, instead of failing later with a message that names no file.
public enum RootCertificateFile {
    /// The DER encoding of the one certificate in `bytes` (DER as is, or the first PEM
    /// `CERTIFICATE` block), or nil when `bytes` hold neither.
    public static func der(from bytes: [UInt8]) -> [UInt8]? {
        defer { _ = OpenSSLErrors.drain() }  // a failed parse leaves errors on the thread's queue
        if (try? X509Certificate(der: bytes)) != nil { return bytes }
        guard bytes.count < Int32.max else { return nil }
        return bytes.withUnsafeBytes { buffer -> [UInt8]? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            guard let certificate = PEM_read_bio_X509(bio, nil, nil, nil) else { return nil }
            defer { X509_free(certificate) }
            var out: UnsafeMutablePointer<UInt8>?
            let length = i2d_X509(certificate, &out)
            guard length > 0, let out else { return nil }
            defer { COpenSSL_free(out) }
            return Array(UnsafeBufferPointer(start: out, count: Int(length)))
        }
    }
}
