import AppStore
import Infrastructure

extension ServiceApp {
    /// The verifier of signed App Store data for `configuration`'s apps and trusted roots
    /// (Apple's root CA G3 when none are configured): the one `serve` and `verify` both use.
    package static func makeVerifier(configuration: Configuration) throws(VerificationSetupError) -> SignedDataVerifier
    {
        try SignedDataVerifier(
            trustedRootsDER: configuration.trustedRootsDER.isEmpty ? [AppleRoots.g3DER] : configuration.trustedRootsDER,
            apps: configuration.apps.map {
                AppIdentity(bundleId: $0.bundleId, appAppleId: $0.appAppleId, environments: Set($0.environments))
            })
    }
}
