import JSON

/// The service's configuration file (api.md §1), validated at start so that a mistake stops
/// start-up with a message naming the file and the key instead of failing on the first request.
public struct Configuration: Sendable {
    public enum TransferPolicy: String, Sendable { case transfer, keep }

    public struct App: Sendable {
        public var bundleId: String
        public var appAppleId: Int64?
        public var environments: [String]
        public var sharedSecret: String?
        public var products: [String: Product]
    }

    public struct Product: Sendable, Equatable {
        public enum Kind: String, Sendable, CaseIterable {
            case consumable, nonConsumable = "non-consumable", subscription, nonRenewing = "non-renewing"
        }
        public var kind: Kind
        public var entitlements: [String]
        public var grants: [String: Int64]
    }

    public struct VerifyReceipt: Sendable {
        public var production: String
        public var sandbox: String
        public var timeoutSeconds: Double
        public var retries: Int
    }

    public var apps: [App]
    /// DER bytes of each trusted root; empty means the bundled Apple Root CA - G3.
    public var trustedRootsDER: [[UInt8]]
    public var trustedRootPaths: [String]
    public var verifyReceipt: VerifyReceipt
    public var transferPolicy: TransferPolicy

    public static let defaultVerifyReceipt = VerifyReceipt(
        production: "https://buy.itunes.apple.com/verifyReceipt",
        sandbox: "https://sandbox.itunes.apple.com/verifyReceipt",
        timeoutSeconds: 15, retries: 3)

    public static let empty = Configuration(
        apps: [], trustedRootsDER: [], trustedRootPaths: [], verifyReceipt: defaultVerifyReceipt,
        transferPolicy: .transfer)

    public static let knownEnvironments: Set<String> = ["Production", "Sandbox", "Xcode", "LocalTesting"]
}

/// A configuration mistake, always naming the file and the key at fault.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public var file: String
    public var key: String
    public var message: String

    public var description: String {
        key.isEmpty ? "\(file): \(message)" : "\(file): \(key): \(message)"
    }
}
