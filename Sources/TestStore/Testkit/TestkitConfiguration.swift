/// What the test store reads of its config.json: the few fields it mints and serves with. The
/// service's `Configuration` owns the file's rules; this target cannot import Service, so the
/// executable loads the file with Service's loader (the same checks `serve` makes) and hands
/// over this view (`Loader`).
public struct TestkitConfiguration: Sendable {
    /// Reads the config at a path, or throws what the service's loader throws.
    public typealias Loader = @Sendable (_ path: String) throws -> TestkitConfiguration

    public struct App: Sendable {
        public var bundleId: String
        public var appAppleId: Int64?
        public var environments: [String]
        public var sharedSecret: String?
        /// The configured products by id, with the type Apple sells each as.
        public var products: [String: TestkitProductType]
        public var serverAPI: ServerAPI?

        public init(
            bundleId: String, appAppleId: Int64?, environments: [String], sharedSecret: String?,
            products: [String: TestkitProductType], serverAPI: ServerAPI?
        ) {
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environments = environments
            self.sharedSecret = sharedSecret
            self.products = products
            self.serverAPI = serverAPI
        }
    }

    /// An app's `serverAPI`: the key the Server API stand-in checks tokens with, and where it is.
    public struct ServerAPI: Sendable {
        public var issuerId: String
        public var keyId: String
        public var privateKeyPath: String
        public var publicKeyPEM: String
        public var localTestingURL: String?

        public init(
            issuerId: String, keyId: String, privateKeyPath: String, publicKeyPEM: String, localTestingURL: String?
        ) {
            self.issuerId = issuerId
            self.keyId = keyId
            self.privateKeyPath = privateKeyPath
            self.publicKeyPEM = publicKeyPEM
            self.localTestingURL = localTestingURL
        }
    }

    public var apps: [App]
    public var verifyReceiptProduction: String
    public var verifyReceiptSandbox: String

    public init(apps: [App], verifyReceiptProduction: String, verifyReceiptSandbox: String) {
        self.apps = apps
        self.verifyReceiptProduction = verifyReceiptProduction
        self.verifyReceiptSandbox = verifyReceiptSandbox
    }
}
