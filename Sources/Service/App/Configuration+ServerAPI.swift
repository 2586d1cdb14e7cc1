import AppStore
import Foundation

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

        public init(
            issuerId: String, keyId: String, privateKeyPath: String, key: AppStoreServerKey,
            productionURL: String = appleProduction, sandboxURL: String = appleSandbox
        ) {
            self.issuerId = issuerId
            self.keyId = keyId
            self.privateKeyPath = privateKeyPath
            self.key = key
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
        }

        /// The client for `bundleId` (the app this block belongs to). The URLs were checked by
        /// the loader, so they parse.
        public func client(
            bundleId: String, policy: AppStoreServerClient.Policy = AppStoreServerClient.Policy()
        ) -> AppStoreServerClient {
            AppStoreServerClient(
                key: key, bundleId: bundleId,
                productionURL: URL(string: productionURL) ?? AppStoreServerClient.appleProduction,
                sandboxURL: URL(string: sandboxURL) ?? AppStoreServerClient.appleSandbox, policy: policy)
        }
    }
}
