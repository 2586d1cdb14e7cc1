import AppStore

extension Configuration {
    /// The testkit CA's leaf key sits in a file on the developer's disk, so whatever it signs is
    /// only fit for local testing: trusting its root for an app that accepts Production or Sandbox
    /// data would let anyone with that file mint real entitlements.
    package func refuseTestkitRootsOutsideLocalTesting(file: String) throws(ConfigurationError) {
        for (index, der) in trustedRootsDER.enumerated() where TestkitRoot.recognises(der: der) {
            for (appIndex, app) in apps.enumerated() {
                let real = app.environments.filter {
                    $0 == AppStoreEnvironment.production || $0 == AppStoreEnvironment.sandbox
                }
                guard !real.isEmpty else { continue }
                throw ConfigurationError(
                    file: file, key: "trustedRoots[\(index)]",
                    message: "is the iap-ledger testkit CA, which may only be trusted for LocalTesting apps, "
                        + "but apps[\(appIndex)] (\(app.bundleId)) accepts \(real.joined(separator: " and "))")
            }
        }
    }
}
