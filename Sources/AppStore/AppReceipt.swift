import COpenSSL

/// A StoreKit 1 app receipt as a device holds it: base64 of a PKCS#7 (CMS) SignedData whose
/// signed content is pkcs7-data (the receipt's ASN.1 attributes) embedded in it.
/// `checkShape` is the local gate in front of verifyReceipt: text that cannot be a receipt is
/// refused here and never sent to Apple. It checks the shape only; Apple checks the signature.
public enum AppReceipt {
    /// Decodes `receipt` and parses it with OpenSSL's CMS decoder; throws `.notAReceipt` naming
    /// what is wrong. Standard base64 (padding optional); line breaks, as some encoders wrap
    /// at 64 or 76 characters, are ignored.
    public static func checkShape(_ receipt: String) throws(ReceiptError) {
        try checkShape(der: decoded(receipt))
    }

    /// The same check on the decoded bytes.
    public static func checkShape(der: [UInt8]) throws(ReceiptError) {
        _ = try content(der: der)
    }

    /// The transaction id of the receipt's first in-app purchase, read locally as Apple's
    /// `ReceiptUtility.extractTransactionIdFromAppReceipt` reads it (the signature is not checked:
    /// the id only names what to ask Apple's Server API for, whose answers are verified). nil: the
    /// receipt holds no in-app purchase.
    public static func transactionId(_ receipt: String) throws(ReceiptError) -> String? {
        try AppReceiptContents(der: content(der: decoded(receipt))).purchases.first?.transactionId
    }

    /// Standard base64 (padding optional; line breaks, as some encoders wrap at 64 or 76
    /// characters, ignored) to bytes.
    static func decoded(_ receipt: String) throws(ReceiptError) -> [UInt8] {
        guard !receipt.isEmpty else { throw .notAReceipt("receipt is empty") }
        let text =
            receipt.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A })
            ? String(decoding: receipt.utf8.filter { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self) : receipt
        guard let der = Base64.decodeStandard(text), !der.isEmpty else {
            throw .notAReceipt("receipt is not standard base64")
        }
        return der
    }

    /// The signed content (the receipt's ASN.1 attributes) of a receipt of the right shape.
    static func content(der: [UInt8]) throws(ReceiptError) -> [UInt8] {
        let notCMS = "receipt is base64 but not a PKCS#7 structure"
        let parsed: (cms: OpaquePointer?, consumed: Int) = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let cms = d2i_CMS_ContentInfo(nil, &cursor, buffer.count)
            return (cms, cursor.map { $0 - buffer.baseAddress! } ?? 0)
        }
        guard let cms = parsed.cms else {
            _ = OpenSSLErrors.drain()
            throw .notAReceipt(notCMS)
        }
        defer { CMS_ContentInfo_free(cms) }
        guard parsed.consumed == der.count else {
            throw .notAReceipt("receipt has \(der.count - parsed.consumed) bytes after its PKCS#7 structure")
        }
        guard OBJ_obj2nid(CMS_get0_type(cms)) == NID_pkcs7_signed else {
            throw .notAReceipt("receipt is PKCS#7 but not SignedData")
        }
        guard OBJ_obj2nid(CMS_get0_eContentType(cms)) == NID_pkcs7_data else {
            throw .notAReceipt("receipt is PKCS#7 SignedData whose content is not pkcs7-data")
        }
        guard let content = CMS_get0_content(cms)?.pointee, ASN1_STRING_length(content) > 0 else {
            throw .notAReceipt("receipt is PKCS#7 SignedData without its content (detached or empty)")
        }
        guard let signers = CMS_get0_SignerInfos(cms), OPENSSL_sk_num(signers) > 0 else {
            throw .notAReceipt("receipt is PKCS#7 SignedData signed by no one")
        }
        return Array(
            UnsafeBufferPointer(start: ASN1_STRING_get0_data(content), count: Int(ASN1_STRING_length(content))))
    }
}

/// Signs content as a PKCS#7 SignedData with the content embedded, the shape of an app receipt
/// (for tests and the local test store; Apple's receipts are checked by Apple, not by this key).
public final class AppReceiptSigner: @unchecked Sendable {
    private let key: OpaquePointer  // EVP_PKEY*
    private let certificate: OpaquePointer  // X509*
    /// Further certificates carried in the SignedData (intermediates), as Apple's receipts carry theirs.
    private let chain: [X509Certificate]

    /// - Parameters:
    ///   - privateKeyPEM: the signer's private key, PEM.
    ///   - certificateDER: the signer's certificate, DER.
    ///   - chainDER: certificates to embed beside it, so a verifier can build the path to its root.
    public init(privateKeyPEM: String, certificateDER: [UInt8], chainDER: [[UInt8]] = []) throws(VerificationSetupError)
    {
        let parsedKey: OpaquePointer? = privateKeyPEM.withCString { pem in
            guard let bio = BIO_new_mem_buf(pem, -1) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let parsedKey else { throw VerificationSetupError("not a PEM private key: \(OpenSSLErrors.drain())") }
        let parsedCertificate: OpaquePointer? = certificateDER.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let parsedCertificate else {
            EVP_PKEY_free(parsedKey)
            throw VerificationSetupError("not a DER certificate: \(OpenSSLErrors.drain())")
        }
        var chain: [X509Certificate] = []
        for der in chainDER {
            guard let parsed = try? X509Certificate(der: der) else {
                EVP_PKEY_free(parsedKey)
                X509_free(parsedCertificate)
                throw VerificationSetupError("not a DER certificate in the chain: \(OpenSSLErrors.drain())")
            }
            chain.append(parsed)
        }
        key = parsedKey
        certificate = parsedCertificate
        self.chain = chain
    }

    deinit {
        EVP_PKEY_free(key)
        X509_free(certificate)
    }

    /// DER of a SignedData over `content` (embedded, binary).
    public func sign(_ content: [UInt8]) -> [UInt8] {
        withExtendedLifetime(self) {
            content.withUnsafeBufferPointer { buffer -> [UInt8] in
                guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else {
                    OpenSSLErrors.fatal("BIO_new_mem_buf")
                }
                defer { BIO_free(bio) }
                // CMS_sign takes its own reference to each certificate of the stack.
                let extra = chain.isEmpty ? nil : COpenSSL_sk_X509_new_null()
                defer { if let extra { COpenSSL_sk_X509_free(extra) } }
                for link in chain { link.withRaw { _ = COpenSSL_sk_X509_push(extra, $0) } }
                guard let cms = CMS_sign(certificate, key, extra, bio, UInt32(CMS_BINARY)) else {
                    OpenSSLErrors.fatal("CMS_sign")
                }
                defer { CMS_ContentInfo_free(cms) }
                guard let der = DEREncoding.bytes({ i2d_CMS_ContentInfo(cms, $0) }) else {
                    OpenSSLErrors.fatal("i2d_CMS_ContentInfo")
                }
                return der
            }
        }
    }

    /// `sign(content)` as the base64 text a client posts as `receipt`.
    public func signedReceipt(_ content: [UInt8]) -> String { Base64.encode(sign(content), url: false) }
}
