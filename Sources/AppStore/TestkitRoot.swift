import COpenSSL

/// The mark of the test store's root certificate (`iap-ledger testkit`, the TestStore target):
/// its subject's common name says it is not Apple. It lives here, not with the test CA, because
/// the production configuration must recognise that root to refuse trusting it for Production
/// or Sandbox data, and the service never imports the test store.
public enum TestkitRoot {
    /// The root's (and only the root's) common name; `recognises` looks for it.
    public static let commonName = "iap-ledger testkit CA (not Apple)"

    /// Whether `der` is a root the test CA made (its subject CN is `commonName`).
    public static func recognises(der: [UInt8]) -> Bool {
        guard let certificate = try? X509Certificate(der: der) else { return false }
        return certificate.withRaw { raw -> Bool in
            guard let name = X509_get_subject_name(raw) else { return false }
            var buffer = [CChar](repeating: 0, count: 256)
            let length = X509_NAME_get_text_by_NID(name, NID_commonName, &buffer, Int32(buffer.count))
            guard length > 0 else { return false }
            return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } == commonName
        }
    }
}
