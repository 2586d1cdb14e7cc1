/// Why a signed payload was rejected; `reason.rawValue` is the API's `reason` word (docs/api.md).
public struct VerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, CaseIterable {
        case malformed
        case unsupportedAlgorithm = "unsupported_algorithm"
        case invalidCertificate = "invalid_certificate"
        case invalidChain = "invalid_chain"
        case signatureMismatch = "signature_mismatch"
        case unknownApp = "unknown_app"
        case wrongEnvironment = "wrong_environment"
    }

    public let reason: Reason
    /// Human-readable cause, for logs and the `verify` CLI; never part of the API contract.
    public let detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}

/// A verifier could not be built from its configuration.
public struct VerificationSetupError: Error, Sendable, CustomStringConvertible {
    public let detail: String
    public init(_ detail: String) { self.detail = detail }
    public var description: String { detail }
}
