import Foundation
import TestSupport
import Testing

/// `iap-ledger verify` and the trusted roots a config names, as an operator meets them.
@Suite(.tags(.database)) struct CLIVerifyTests {
    /// A config trusting the test root, written as `rootFile` (DER bytes unless `pem`).
    static func configuration(in directory: String, rootFile: String = "root.der", rootBytes: [UInt8]? = nil) throws
        -> String
    {
        let bytes = rootBytes ?? TestVectors.shared.rootDER
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + rootFile))
        let file = directory + "/config.json"
        try """
        {"apps": [{"bundleId": "\(TestVectors.bundleId)", "appAppleId": \(TestVectors.appAppleId),
                   "environments": ["Sandbox", "Production"]}],
         "trustedRoots": ["\(rootFile)"]}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    static func pem(_ der: [UInt8]) -> [UInt8] {
        let body = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return Array("-----BEGIN CERTIFICATE-----\n\(body)\n-----END CERTIFICATE-----\n".utf8)
    }

    @Test func aWrongKindIsRejectedWithTheKindThePayloadLooksLike() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try Self.configuration(in: root)
        let vectors = TestVectors.shared
        let cases: [(jws: String, given: String, expected: String)] = [
            (vectors.signedNotification(type: "DID_RENEW"), "transaction", "notification"),
            (vectors.signedNotification(type: "DID_RENEW"), "renewal", "notification"),
            (vectors.signedTransaction(), "notification", "transaction"),
        ]
        for (index, (jws, given, expected)) in cases.enumerated() {
            let file = root + "/payload-\(index).jws"
            try jws.write(toFile: file, atomically: true, encoding: .utf8)
            let wrong = try OpsBinary.run(["verify", "--config", config, "--kind", given, file])
            #expect(wrong.status == 1, "\(given): \(wrong.stderr)")
            #expect(wrong.stderrLines.count == 1, "\(wrong.stderr)")
            #expect(
                wrong.stderr.contains("the payload looks like a \(expected), not a \(given): try --kind \(expected)"),
                "\(wrong.stderr)")
            let right = try OpsBinary.run(["verify", "--config", config, "--kind", expected, file])
            #expect(right.status == 0, "\(expected): \(right.stderr)")
            let guessed = try OpsBinary.run(["verify", "--config", config, file])
            #expect(guessed.status == 0, "no --kind: \(guessed.stderr)")
        }
        // A payload of the right kind that fails gets no hint.
        let foreign = root + "/foreign.jws"
        try vectors.signedTransaction(["bundleId": .string("com.other")]).write(
            toFile: foreign, atomically: true, encoding: .utf8)
        let refused = try OpsBinary.run(["verify", "--config", config, "--kind", "transaction", foreign])
        #expect(refused.status == 1)
        #expect(refused.stdout == "unknown_app\n")
        #expect(!refused.stderr.contains("try --kind"), "\(refused.stderr)")
    }

    @Test func aPEMRootIsAcceptedLikeItsDER() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try Self.configuration(
            in: root, rootFile: "root.pem", rootBytes: Self.pem(TestVectors.shared.rootDER))
        let file = root + "/transaction.jws"
        try TestVectors.shared.signedTransaction().write(toFile: file, atomically: true, encoding: .utf8)
        let outcome = try OpsBinary.run(["verify", "--config", config, "--kind", "transaction", file])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("\"bundleId\": \"\(TestVectors.bundleId)\""), "\(outcome.stdout)")
    }

    @Test(arguments: ["broken.pem", "notes.der"])
    func aRootThatIsNoCertificateIsNamedAndServeStartsNothing(name: String) throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let junk =
            name.hasSuffix(".pem")
            ? Array("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n".utf8)
            : Array("these are not the bytes of a certificate".utf8)
        let config = try Self.configuration(in: root, rootFile: name, rootBytes: junk)
        let data = root + "/data"
        let serve = try OpsBinary.run(["serve", "--port", "0", "--config", config, "--data-dir", data])
        CLIBadInputTests.expectOneLineFailure(
            serve, containing: [config, "trustedRoots[0]", "\(root)/\(name)", "not an X.509 certificate"])
        #expect(!FileManager.default.fileExists(atPath: data), "a cluster was created before the config was checked")
        let verify = try OpsBinary.run(["verify", "--config", config, "-"])
        CLIBadInputTests.expectOneLineFailure(verify, containing: ["trustedRoots[0]", "\(root)/\(name)"])
    }

    @Test func aVerifyReceiptURLServeCouldNotParseIsRefusedBeforeAnyCluster() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = root + "/config.json"
        try #"{"verifyReceipt": {"production": "https://buy itunes.apple.com/verifyReceipt"}}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let data = root + "/data"
        let serve = try OpsBinary.run(["serve", "--port", "0", "--config", config, "--data-dir", data])
        CLIBadInputTests.expectOneLineFailure(serve, containing: [config, "verifyReceipt.production", "http(s) URL"])
        #expect(!FileManager.default.fileExists(atPath: data), "a cluster was created before the config was checked")
    }
}
