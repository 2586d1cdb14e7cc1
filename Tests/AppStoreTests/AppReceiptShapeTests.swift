import AppStore
import Foundation
import TestSupport
import Testing

/// The local receipt gate: only base64 of a PKCS#7 SignedData with embedded pkcs7-data passes.
/// The shapes are made by the `openssl` command line as well as by `AppReceiptSigner`, so the
/// check is held against OpenSSL's own idea of each structure, not against our signer alone.
@Suite struct AppReceiptShapeTests {
    let directory: URL
    let pki = TestVectors.fixtures.appendingPathComponent("test-pki")

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("receipt-shape-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data([0x31, 0x03, 0x02, 0x01, 0x01]).write(to: directory.appendingPathComponent("payload"))
    }

    /// Runs `openssl ARGS -in payload -outform DER` and answers the DER it wrote.
    func openssl(_ arguments: [String]) throws -> [UInt8] {
        let out = directory.appendingPathComponent("out-\(UUID().uuidString).der")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments =
            arguments + ["-in", directory.appendingPathComponent("payload").path, "-outform", "DER", "-out", out.path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " "))")
        return Array(try Data(contentsOf: out))
    }

    var signerArguments: [String] {
        [
            "-signer", pki.appendingPathComponent("testLeaf.pem").path, "-inkey",
            pki.appendingPathComponent("testLeaf.key").path,
        ]
    }

    func refusal(_ receipt: String) -> String? {
        do {
            try AppReceipt.checkShape(receipt)
            return nil
        } catch {
            guard case .notAReceipt(let detail) = error else { return "unexpected \(error)" }
            return detail
        }
    }

    @Test func signedDataWithEmbeddedContentPasses() throws {
        let cms = try openssl(["cms", "-sign", "-nodetach", "-binary"] + signerArguments)
        let smime = try openssl(["smime", "-sign", "-nodetach", "-binary"] + signerArguments)
        // BER with indefinite lengths, as Apple's own receipts are encoded.
        let ber = try openssl(["cms", "-sign", "-nodetach", "-binary", "-stream"] + signerArguments)
        #expect(ber.count > 2 && ber[1] == 0x80, "openssl did not write an indefinite length")
        for der in [cms, smime, ber] {
            #expect(refusal(JWSSigner.base64(der)) == nil)
        }
        #expect(refusal(TestReceipts.receipt()) == nil)
        // Wrapped at 64 characters, as some encoders do.
        let wrapped = JWSSigner.base64(cms).enumerated().map {
            $0.offset > 0 && $0.offset % 64 == 0 ? "\r\n\($0.element)" : "\($0.element)"
        }.joined()
        #expect(wrapped.contains("\r\n"))
        #expect(refusal(wrapped) == nil)
    }

    @Test func everyOtherShapeIsRefusedWithItsReason() throws {
        let signed = try openssl(["cms", "-sign", "-nodetach", "-binary"] + signerArguments)
        let cases: [(String, String)] = [
            ("!!!not base64!!!", "not standard base64"),
            ("", "empty"),
            ("MIIT" + String(repeating: "QUJD", count: 40) + "QQ==", "not a PKCS#7"),
            (JWSSigner.base64(Array(try Data(contentsOf: pki.appendingPathComponent("testCA.der")))), "not a PKCS#7"),
            (JWSSigner.base64(try openssl(["cms", "-data_create"])), "not SignedData"),
            (JWSSigner.base64(try openssl(["cms", "-sign", "-binary"] + signerArguments)), "without its content"),
            (
                JWSSigner.base64(
                    try openssl(
                        ["cms", "-sign", "-nodetach", "-binary", "-econtent_type", "1.2.840.113549.1.9.16.1.4"]
                            + signerArguments)),
                "not pkcs7-data"
            ),
            (JWSSigner.base64(signed + [0x00, 0x00]), "2 bytes after"),
            (JWSSigner.base64(Array(signed.dropLast(10))), "not a PKCS#7"),
            (JWSSigner.base64URL(signed).replacingOccurrences(of: "=", with: "") + "-_", "not standard base64"),
        ]
        for (receipt, reason) in cases {
            let refused = refusal(receipt)
            #expect(refused?.contains(reason) == true, "\(receipt.prefix(40)): \(refused ?? "accepted")")
        }
    }
}
