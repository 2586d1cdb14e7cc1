import Foundation
import JSON

/// Apple's `DecodedRealtimeRequestBody`: a Retention Messaging request (what the App Store sends
/// to the Get Retention Message endpoint), with Apple's field names.
public struct RealtimeRequest: Sendable, Hashable {
    public var originalTransactionId: String
    public var appAppleId: Int64?
    public var productId: String
    public var userLocale: String
    /// Apple's UUID, lower case.
    public var requestIdentifier: String
    public var signedDate: Int64
    public var environment: String
    /// The configured app the request is for: a realtime request names no bundleId, only
    /// `appAppleId`, so the verifier picks the app (see `verifyRealtimeRequest`).
    public var bundleId: String
    /// The decoded payload's bytes, as Apple signed them.
    public var rawJSON: [UInt8]
}

extension SignedDataVerifier {
    /// Verifies a Retention Messaging `signedPayload` as Apple's `verifyAndDecodeRealtimeRequest`
    /// does: the signature and chain at its `signedDate` (docs/FORMATS.md §1.2), every field of
    /// `DecodedRealtimeRequestBody` present and typed (Apple's decoder requires them all;
    /// `requestIdentifier` a UUID), then the app: in Production the `appAppleId` must be a
    /// configured app's; and the environment must be one that app accepts. Apple's verifier
    /// serves one app; with several configured, the request's app is the one whose appAppleId
    /// it names, else (outside Production) the one app accepting its environment.
    public func verifyRealtimeRequest(_ jws: String) throws(VerificationError) -> RealtimeRequest {
        let (json, raw) = try verifiedPayload(jws, claimedEnvironment: { $0.string("environment") })
        func required(_ key: String) throws(VerificationError) -> String {
            guard let value = json.string(key) else {
                throw VerificationError(.malformed, "realtime request has no \(key)")
            }
            return value
        }
        let originalTransactionId = try required("originalTransactionId")
        let productId = try required("productId")
        let userLocale = try required("userLocale")
        let environment = try required("environment")
        guard let requestIdentifier = UUID(uuidString: try required("requestIdentifier")) else {
            throw VerificationError(.malformed, "realtime request's requestIdentifier is not a UUID")
        }
        guard let signedDate = json.millis("signedDate") else {
            throw VerificationError(.malformed, "realtime request has no signedDate")
        }
        guard let appAppleId = json.int64("appAppleId") else {
            throw VerificationError(.malformed, "realtime request has no appAppleId")
        }
        let app = try realtimeApp(appAppleId: appAppleId, environment: environment)
        return RealtimeRequest(
            originalTransactionId: originalTransactionId, appAppleId: appAppleId, productId: productId,
            userLocale: userLocale, requestIdentifier: requestIdentifier.uuidString.lowercased(),
            signedDate: signedDate,
            environment: environment, bundleId: app.bundleId, rawJSON: raw)
    }

    private func realtimeApp(appAppleId: Int64, environment: String) throws(VerificationError) -> AppIdentity {
        let named = apps.filter { $0.appAppleId == appAppleId }
        if environment == AppStoreEnvironment.production {
            // As Apple: in Production the appAppleId must be the app's.
            guard !named.isEmpty else {
                throw VerificationError(.unknownApp, "appAppleId \(appAppleId) is not a configured app")
            }
        }
        if let app = named.first(where: { $0.environments.contains(environment) }) { return app }
        guard named.isEmpty else {
            throw VerificationError(
                .wrongEnvironment, "environment \(environment) is not accepted for appAppleId \(appAppleId)")
        }
        // Outside Production Apple does not check appAppleId (a Sandbox app may have none yet).
        let accepting = apps.filter { $0.environments.contains(environment) }
        guard !accepting.isEmpty else {
            throw VerificationError(.wrongEnvironment, "environment \(environment) is not accepted")
        }
        guard accepting.count == 1 else {
            throw VerificationError(
                .unknownApp, "appAppleId \(appAppleId) names no configured app and several accept \(environment)")
        }
        return accepting[0]
    }
}
