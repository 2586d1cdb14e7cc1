import Foundation

/// An App Store Connect In-App Purchase key: the `.p8` (PKCS#8 PEM, EC P-256) with the key id
/// and issuer id App Store Connect shows beside it. Loaded once at start-up, so a wrong file
/// stops `serve` instead of failing the first request to Apple.
public struct AppStoreServerKey: Sendable {
    public let issuerId: String
    public let keyId: String
    /// Signs with the key (no x5c: Apple identifies the key by `kid`).
    let signer: JWSSigner

    /// Why a key cannot be used; `detail` names the cause, never the key material.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public let detail: String
        public var description: String { detail }
    }

    /// - Parameter privateKeyPEM: the text of the `.p8` file.
    public init(issuerId: String, keyId: String, privateKeyPEM: String) throws(LoadError) {
        guard !issuerId.isEmpty else { throw LoadError(detail: "the issuer id is empty") }
        guard !keyId.isEmpty else { throw LoadError(detail: "the key id is empty") }
        let signer: JWSSigner
        do { signer = try JWSSigner(privateKeyPEM: privateKeyPEM, chainDER: []) } catch {
            throw LoadError(detail: "not a PEM private key (expected App Store Connect's .p8, \"BEGIN PRIVATE KEY\")")
        }
        // ES256 is the only algorithm Apple accepts: a key on another curve (or RSA) would sign
        // tokens that Apple answers 401 to, one request at a time.
        guard signer.isP256 else { throw LoadError(detail: "not an EC P-256 key (App Store Connect's .p8 keys are)") }
        self.issuerId = issuerId
        self.keyId = keyId
        self.signer = signer
    }

    /// Reads `path` (the `.p8` App Store Connect lets one download once).
    public static func load(issuerId: String, keyId: String, path: String) throws(LoadError) -> AppStoreServerKey {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else {
            throw LoadError(detail: "cannot read \(path)")
        }
        return try AppStoreServerKey(
            issuerId: issuerId, keyId: keyId, privateKeyPEM: String(decoding: data, as: UTF8.self))
    }

    /// The public half (PEM `PUBLIC KEY`): what Apple holds, and what the stand-in checks with.
    public var publicKeyPEM: String { signer.publicKeyPEM }
}
