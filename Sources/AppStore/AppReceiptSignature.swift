import COpenSSL

/// Checks an app receipt's CMS signature against trusted roots with OpenSSL's CMS_verify, as
/// Apple's verifyReceipt does before it reads a receipt; the stand-in of the test store
/// (`testkit apple`) answers with it. The service itself never checks receipts this way: for
/// Apple's receipts that is Apple's job.
public enum AppReceiptSignature {
    public enum Failure: Error, Sendable, Equatable {
        /// Not base64 or not a PKCS#7 SignedData with embedded content (verifyReceipt's 21002).
        case malformed(String)
        /// A SignedData whose signature or certificate chain does not lead to a trusted root (21003).
        case notAuthenticated(String)
    }

    /// The signed content of `receipt` (base64 text) once its signature verifies under one of
    /// `trustedRootsDER`. The chain's intermediates come from the receipt itself, as in Apple's.
    public static func verifiedContent(_ receipt: String, trustedRootsDER: [[UInt8]]) throws(Failure) -> [UInt8] {
        do { try AppReceipt.checkShape(receipt) } catch { throw .malformed(error.description) }
        let text = String(decoding: receipt.utf8.filter { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
        guard let der = Base64.decodeStandard(text) else { throw .malformed("receipt is not standard base64") }
        let cms: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_CMS_ContentInfo(nil, &cursor, buffer.count)
        }
        guard let cms else {
            _ = OpenSSLErrors.drain()
            throw .malformed("receipt is not a PKCS#7 structure")
        }
        defer { CMS_ContentInfo_free(cms) }
        guard let store = X509_STORE_new() else { OpenSSLErrors.fatal("X509_STORE_new") }
        defer { X509_STORE_free(store) }
        for root in trustedRootsDER {
            guard let certificate = try? X509Certificate(der: root) else { continue }
            _ = certificate.withRaw { X509_STORE_add_cert(store, $0) }  // takes its own reference
        }
        guard let out = BIO_new(BIO_s_mem()) else { OpenSSLErrors.fatal("BIO_new") }
        defer { BIO_free(out) }
        guard CMS_verify(cms, nil, store, nil, out, UInt32(CMS_BINARY)) == 1 else {
            throw .notAuthenticated("receipt signature does not verify: \(OpenSSLErrors.drain())")
        }
        var data: UnsafeMutablePointer<CChar>?
        let length = COpenSSL_BIO_get_mem_data(out, &data)
        guard length > 0, let data else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
            Array(UnsafeBufferPointer(start: $0, count: Int(length)))
        }
    }
}
