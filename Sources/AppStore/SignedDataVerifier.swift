import Glibc
import JSON

/// Verifies App Store signed data (JWS) the way Apple's SignedDataVerifier does (docs/FORMATS.md §1.2),
/// then checks the payload against the configured apps. Thread-safe; share one instance.
public final class SignedDataVerifier: Sendable {
    let trust: TrustStore
    let apps: [AppIdentity]
    let environments: Set<String>
    let cache: ChainCache
    let intermediateOIDObject = ObjectIdentifierASN1("1.2.840.113635.100.6.2.1")
    let leafOIDObject = ObjectIdentifierASN1("1.2.840.113635.100.6.11.1")

    /// - Parameters:
    ///   - trustedRootsDER: the trust anchors (default `[AppleRoots.g3DER]`); x5c's own root is ignored.
    ///   - apps: accepted apps; an app accepting "Production" must have an `appAppleId` (as Apple's).
    public init(trustedRootsDER: [[UInt8]] = [AppleRoots.g3DER], apps: [AppIdentity], chainCacheSize: Int = 64)
        throws(VerificationSetupError)
    {
        // No apps is allowed: a service started without a config refuses every payload as unknown_app.
        for app in apps where app.environments.contains(AppStoreEnvironment.production) && app.appAppleId == nil {
            throw VerificationSetupError("app \(app.bundleId) accepts Production but has no appAppleId")
        }
        for app in apps where app.environments.isEmpty {
            throw VerificationSetupError("app \(app.bundleId) accepts no environment")
        }
        trust = try TrustStore(rootsDER: trustedRootsDER)
        self.apps = apps
        environments = apps.reduce(into: []) { $0.formUnion($1.environments) }
        cache = ChainCache(capacity: chainCacheSize)
    }

    /// Verifies a signed transaction (`signedTransactionInfo`).
    public func verifyTransaction(_ jws: String) throws(VerificationError) -> JWSTransaction {
        let (json, raw) = try verifiedPayload(jws, claimedEnvironment: { $0.string("environment") })
        let transaction = JWSTransaction(json: json, rawJSON: raw)
        try checkApp(bundleId: transaction.bundleId, appAppleId: nil, environment: transaction.environment)
        return transaction
    }

    /// Verifies signed renewal info. It has no bundleId: only its environment is checked.
    public func verifyRenewalInfo(_ jws: String) throws(VerificationError) -> JWSRenewalInfo {
        let (json, raw) = try verifiedPayload(jws, claimedEnvironment: { $0.string("environment") })
        let info = JWSRenewalInfo(json: json, rawJSON: raw)
        guard let env = info.environment, environments.contains(env) else {
            throw VerificationError(
                .wrongEnvironment, "renewal info environment \(info.environment ?? "missing") is not accepted")
        }
        return info
    }

    /// Verifies a signed app transaction as Apple's `verifyAndDecodeAppTransaction` does: the
    /// signature and chain at its `receiptCreationDate`, then the app (bundleId, and appAppleId
    /// in Production) and its `receiptType` as the environment.
    public func verifyAppTransaction(_ jws: String) throws(VerificationError) -> AppTransaction {
        let (json, raw) = try verifiedPayload(
            jws, claimedEnvironment: { $0.string("receiptType") }, dateKey: "receiptCreationDate")
        let app = AppTransaction(json: json, rawJSON: raw)
        try checkApp(
            bundleId: app.bundleId, appAppleId: app.appAppleId, environment: app.receiptType, checksAppAppleId: true)
        return app
    }

    /// Verifies a notification's `signedPayload` and the signed transaction and renewal info inside it.
    public func verifyNotification(_ jws: String) throws(VerificationError) -> VerifiedNotification {
        let (json, raw) = try verifiedPayload(
            jws, claimedEnvironment: { NotificationPayload(json: $0, rawJSON: []).appClaim.environment })
        let payload = NotificationPayload(json: json, rawJSON: raw)
        let claim = payload.appClaim
        try checkApp(
            bundleId: claim.bundleId, appAppleId: claim.appAppleId, environment: claim.environment,
            checksAppAppleId: true)
        var result = VerifiedNotification(payload: payload, transaction: nil, renewalInfo: nil)
        if let nested = payload.data?.signedTransactionInfo { result.transaction = try verifyTransaction(nested) }
        if let nested = payload.data?.signedRenewalInfo { result.renewalInfo = try verifyRenewalInfo(nested) }
        if let nested = payload.appData?.signedAppTransactionInfo {
            let app = try verifyAppTransaction(nested)
            // The app transaction speaks for the app the notification names (RESCIND_CONSENT).
            guard app.bundleId == claim.bundleId, app.receiptType == claim.environment else {
                throw VerificationError(
                    .unknownApp, "the app transaction is not of the notification's app and environment")
            }
            result.appTransaction = app
        }
        return result
    }

    // MARK: - App checks (docs/FORMATS.md §1.2 step 9)

    private func checkApp(bundleId: String?, appAppleId: Int64?, environment: String?, checksAppAppleId: Bool = false)
        throws(VerificationError)
    {
        var candidates = apps.filter { $0.bundleId == bundleId }
        guard !candidates.isEmpty else {
            throw VerificationError(.unknownApp, "bundleId \(bundleId ?? "missing") is not a configured app")
        }
        // As Apple: a Production notification must name the app's appAppleId; any appAppleId present
        // must match (Apple's test: a Production-configured 1235 verifier rejects a 1234 notification).
        if checksAppAppleId {
            let matches = candidates.filter { app in
                if environment == AppStoreEnvironment.production { return app.appAppleId == appAppleId }
                return appAppleId == nil || app.appAppleId == nil || app.appAppleId == appAppleId
            }
            guard !matches.isEmpty else {
                throw VerificationError(
                    .unknownApp, "appAppleId \(appAppleId.map(String.init) ?? "missing") does not match \(bundleId!)")
            }
            candidates = matches
        }
        guard candidates.contains(where: { app in environment.map(app.environments.contains) ?? false }) else {
            throw VerificationError(
                .wrongEnvironment, "environment \(environment ?? "missing") is not accepted for \(bundleId!)")
        }
    }
}
