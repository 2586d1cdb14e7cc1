import AppStore
import Foundation
import JSON

extension Configuration {
    /// An app's `serverAPI` (docs/api.md §5): the In-App Purchase key of App Store Connect and
    /// where Apple's Server API is. The key is loaded and checked when the config is read.
    public struct ServerAPI: Sendable {
        public static let appleProduction = AppStoreServerClient.appleProduction.absoluteString
        public static let appleSandbox = AppStoreServerClient.appleSandbox.absoluteString

        public var issuerId: String
        public var keyId: String
        /// The `.p8` file, resolved against the config file's directory.
        public var privateKeyPath: String
        public var key: AppStoreServerKey
        public var productionURL: String
        public var sandboxURL: String
        /// `baseURLs.LocalTesting`: required for a local-testing app (Apple has no such host).
        public var localTestingURL: String?
        /// The environments asked for a transaction, in order: Production then Sandbox for a
        /// store app; LocalTesting alone for a local-testing one (`environments(for:)`).
        public var searchOrder: [AppStoreServerEnvironment]

        public init(
            issuerId: String, keyId: String, privateKeyPath: String, key: AppStoreServerKey,
            productionURL: String = appleProduction, sandboxURL: String = appleSandbox, localTestingURL: String? = nil,
            searchOrder: [AppStoreServerEnvironment] = [.production, .sandbox]
        ) {
            self.issuerId = issuerId
            self.keyId = keyId
            self.privateKeyPath = privateKeyPath
            self.key = key
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.localTestingURL = localTestingURL
            self.searchOrder = searchOrder
        }

        /// The Server API environments an app with these `environments` has data in: a store app
        /// asks Production then Sandbox (whichever it accepts: a purchase id does not say where it
        /// lives), a local-testing app only LocalTesting (Xcode's StoreKit testing has no Server
        /// API), so its requests never reach Apple. Empty: an Xcode-only app, which has none.
        public static func environments(for environments: [String]) -> [AppStoreServerEnvironment] {
            if environments.contains(where: {
                $0 == AppStoreServerEnvironment.production.rawValue || $0 == AppStoreServerEnvironment.sandbox.rawValue
            }) {
                return [.production, .sandbox]
            }
            return environments.contains(AppStoreServerEnvironment.localTesting.rawValue) ? [.localTesting] : []
        }

        /// The client for `bundleId` (the app this block belongs to). The URLs were checked by
        /// the loader, so they parse.
        public func client(
            bundleId: String, policy: AppStoreServerClient.Policy = AppStoreServerClient.Policy()
        ) -> AppStoreServerClient {
            AppStoreServerClient(
                key: key, bundleId: bundleId,
                productionURL: URL(string: productionURL) ?? AppStoreServerClient.appleProduction,
                sandboxURL: URL(string: sandboxURL) ?? AppStoreServerClient.appleSandbox,
                localTestingURL: localTestingURL.flatMap { URL(string: $0) }, searchOrder: searchOrder, policy: policy)
        }
    }
}

extension ConfigurationReader {
    /// `serverAPI.baseURLs` (key `at` is the `serverAPI` block's) for an app accepting
    /// `environments`: only the hosts it asks may be named; Production and Sandbox default to
    /// Apple's, LocalTesting has no default and is required for a local-testing app.
    package func serverAPIHosts(_ value: JSONValue?, at key: String, environments: [String]) throws(ConfigurationError)
        -> (production: String, sandbox: String, localTesting: String?, searchOrder: [AppStoreServerEnvironment])
    {
        let searchOrder = Configuration.ServerAPI.environments(for: environments)
        guard !searchOrder.isEmpty else {
            throw error(
                key,
                "the app accepts only Xcode data, and Xcode's StoreKit testing has no App Store Server API: remove serverAPI"
            )
        }
        var production = Configuration.ServerAPI.appleProduction
        var sandbox = Configuration.ServerAPI.appleSandbox
        var localTesting: String?
        if let value {
            let entries = try object(value, at: "\(key).baseURLs")
            try allowOnly(Set(AppStoreServerEnvironment.allCases.map(\.rawValue)), in: entries, at: "\(key).baseURLs")
            for name in entries.keys.sorted() where !searchOrder.map(\.rawValue).contains(name) {
                throw error(
                    "\(key).baseURLs.\(name)",
                    "is never asked: the app's environments are \(environments.joined(separator: ", "))")
            }
            if let url = entries["Production"] { production = try self.url(url, at: "\(key).baseURLs.Production") }
            if let url = entries["Sandbox"] { sandbox = try self.url(url, at: "\(key).baseURLs.Sandbox") }
            if let url = entries["LocalTesting"] {
                localTesting = try self.url(url, at: "\(key).baseURLs.LocalTesting")
            }
        }
        if searchOrder.contains(.localTesting) && localTesting == nil {
            throw error(
                "\(key).baseURLs.LocalTesting",
                "is required for a LocalTesting app: Apple has no LocalTesting host (`iap-ledger testkit apple` serves one)"
            )
        }
        return (production, sandbox, localTesting, searchOrder)
    }
}
