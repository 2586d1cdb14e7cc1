import AppStore
import Foundation

/// App receipts in the real shape (base64 of a PKCS#7 SignedData with embedded pkcs7-data),
/// signed with the test PKI's leaf: what the service's local receipt check lets through to the
/// stand-in verifyReceipt server. Apple would reject the signature; the stand-in does not look.
public enum TestReceipts {
    public static let signer: AppReceiptSigner = {
        let pki = TestVectors.fixtures.appendingPathComponent("test-pki")
        do {
            let key = try String(contentsOf: pki.appendingPathComponent("testLeaf.key"), encoding: .utf8)
            let leaf = try TestVectors.certificate(pki.appendingPathComponent("testLeaf.pem"))
            return try AppReceiptSigner(privateKeyPEM: key, certificateDER: leaf)
        } catch {
            fatalError("test PKI unreadable: \(error)")
        }
    }()

    /// A receipt whose signed content is `content` (default: a small ASN.1 SET, as Apple's payload is).
    public static func receipt(_ content: [UInt8] = [0x31, 0x03, 0x02, 0x01, 0x01]) -> String {
        signer.signedReceipt(content)
    }
}
