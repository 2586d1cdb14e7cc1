import Foundation

/// Checks signatures with the `openssl` command line, so a test holds our signers against
/// OpenSSL's own verifier and the key's public half, not against our own code.
public enum OpenSSLCommandLine {
    /// Apple's test `.p8` (the key Apple's libraries sign offers with in their tests).
    public static let testSigningKey = TestVectors.fixtures.appendingPathComponent(
        "test-resources/certs/testSigningKey.p8")

    /// Whether `signatureDER` (ECDSA-SHA256, DER) over `message` verifies with the public key
    /// `openssl pkey -pubout` derives from the private key at `privateKey`.
    public static func verifies(signatureDER: [UInt8], message: [UInt8], privateKey: URL = testSigningKey) throws
        -> Bool
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openssl-verify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let publicKey = directory.appendingPathComponent("public.pem")
        let messageFile = directory.appendingPathComponent("message")
        let signatureFile = directory.appendingPathComponent("signature.der")
        try Data(message).write(to: messageFile)
        try Data(signatureDER).write(to: signatureFile)
        guard try run(["pkey", "-in", privateKey.path, "-pubout", "-out", publicKey.path]) == 0 else {
            throw CommandFailure(description: "openssl pkey -pubout failed for \(privateKey.path)")
        }
        return try run([
            "dgst", "-sha256", "-verify", publicKey.path, "-signature", signatureFile.path, messageFile.path,
        ]) == 0
    }

    /// Whether a compact ES256 JWS verifies with that key (R‖S re-encoded as DER for OpenSSL).
    public static func verifiesJWS(_ jws: String, privateKey: URL = testSigningKey) throws -> Bool {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = base64URLDecode(String(parts[2])), raw.count == 64 else { return false }
        return try verifies(
            signatureDER: derSignature(r: Array(raw[0..<32]), s: Array(raw[32..<64])),
            message: Array("\(parts[0]).\(parts[1])".utf8), privateKey: privateKey)
    }

    /// Decodes one unpadded base64url JWS segment.
    public static func base64URLDecode(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }

    /// Generates a private key with `openssl genpkey ARGS` (e.g. another curve, RSA) as PEM text.
    public static func generateKey(_ arguments: [String]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString).pem")
        defer { try? FileManager.default.removeItem(at: file) }
        guard try run(["genpkey"] + arguments + ["-out", file.path]) == 0 else {
            throw CommandFailure(description: "openssl genpkey \(arguments.joined(separator: " ")) failed")
        }
        return try String(contentsOf: file, encoding: .utf8)
    }

    public struct CommandFailure: Error, CustomStringConvertible { public let description: String }

    /// SEQUENCE { INTEGER r, INTEGER s } (ECDSA-Sig-Value, RFC 3279): the shape `openssl dgst` reads.
    static func derSignature(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }

    private static func run(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
