/// One app the service accepts signed data for.
public struct AppIdentity: Sendable, Hashable {
    public var bundleId: String
    /// Apple's numeric app id; required when `environments` contains "Production" (as Apple's verifier).
    public var appAppleId: Int64?
    /// Accepted `environment` values: "Production", "Sandbox", and for local testing "Xcode"/"LocalTesting".
    public var environments: Set<String>

    public init(bundleId: String, appAppleId: Int64?, environments: Set<String>) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
    }
}

/// Apple's `environment` values.
public enum AppStoreEnvironment {
    public static let production = "Production"
    public static let sandbox = "Sandbox"
    public static let xcode = "Xcode"
    public static let localTesting = "LocalTesting"
    /// Environments Apple's libraries verify without any cryptography (local StoreKit testing).
    static let unsigned: Set<String> = [xcode, localTesting]
}
