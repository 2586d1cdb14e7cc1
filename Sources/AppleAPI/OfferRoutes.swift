import AppStore
import Foundation
import HTTP
import Infrastructure
import JSON

/// `POST /v1/offers/signatures` (docs/api.md §5): signs a promotional offer with the key of the
/// app that sells the product, both as the V2 JWS and as the legacy SKPaymentDiscount signature,
/// so one call serves StoreKit 2 and StoreKit 1 clients (`applicationUsername` = the userId).
package struct OfferRoutes: Sendable {
    /// The offer signer of an app, by bundleId; nil: that app has no Server API key.
    package typealias SignerLookup = @Sendable (_ bundleId: String) -> OfferSigner?

    package let apps: [Configuration.App]
    package let signers: SignerLookup
    /// Milliseconds since 1970: the legacy `timestamp` and the JWS `iat`.
    package let clock: @Sendable () -> Int64
    /// Where `ErrorMapping` logs what an operator must see of a failed request.
    package let logger: Logger

    package init(
        apps: [Configuration.App], signers: @escaping SignerLookup, clock: @escaping @Sendable () -> Int64,
        logger: Logger
    ) {
        self.apps = apps
        self.signers = signers
        self.clock = clock
        self.logger = logger
    }

    /// One signer per app whose config has a `serverAPI` key, built once at start-up. The
    /// config loader already read that `.p8` and checked it is EC P-256 (a bad one stopped
    /// start-up naming the file), so a failure here means the file changed since: that app
    /// then answers `server_api_not_configured`.
    package static func signers(from configuration: Configuration) -> SignerLookup {
        var signers: [String: OfferSigner] = [:]
        for app in configuration.apps {
            guard let api = app.serverAPI,
                let pem = try? String(contentsOfFile: api.privateKeyPath, encoding: .utf8),
                let signer = try? OfferSigner(
                    bundleId: app.bundleId, keyId: api.keyId, issuerId: api.issuerId, privateKeyPEM: pem)
            else { continue }
            signers[app.bundleId] = signer
        }
        let all = signers
        return { bundleId in all[bundleId] }
    }

    package func register(on router: inout Router) {
        router.add("POST", "/v1/offers/signatures", scope: "write") { request, _ in
            ErrorMapping.respond(logger, request) { () throws(ServiceError) in try sign(request) }
        }
    }

    private func sign(_ request: HTTPRequest) throws(ServiceError) -> HTTPResponse {
        let parsed: JSONValue
        do { parsed = try JSONValue.parse(request.body) } catch {
            throw .invalidRequest("the body is not valid JSON: \(error)")
        }
        guard let body = parsed.objectValue else { throw .invalidRequest("the body must be a JSON object") }
        let productId = try Self.identifier(body, "productId")!
        let offerId = try Self.identifier(body, "offerId")!
        let userId = try Self.identifier(body, "userId")!
        let transactionId = try Self.identifier(body, "transactionId", required: false)
        let bundleId = try Self.identifier(body, "bundleId", required: false)
        let (app, signer) = try chooseApp(productId: productId, bundleId: bundleId)
        let nonce = UUID()
        let now = clock()
        let jws: String
        do {
            jws = try signer.promotionalOfferV2(
                productId: productId, offerIdentifier: offerId, transactionId: transactionId, nonce: nonce, now: now)
        } catch {
            throw .serverAPINotConfigured("\(app): \(error)")
        }
        let legacy = signer.legacySignature(
            productIdentifier: productId, offerIdentifier: offerId, applicationUsername: userId, nonce: nonce,
            timestamp: now)
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        writer.key("bundleId")
        writer.string(app)
        writer.key("jws")
        writer.string(jws)
        writer.key("legacy")
        writer.beginObject()
        writer.key("keyIdentifier")
        writer.string(legacy.keyIdentifier)
        writer.key("nonce")
        writer.string(legacy.nonce)
        writer.key("timestamp")
        writer.int(legacy.timestamp)
        writer.key("signature")
        writer.string(legacy.signature)
        writer.endObject()
        writer.endObject()
        return .json(200, writer.bytes)
    }

    /// The app whose key signs: the request names no app, so it is the one whose `products` lists
    /// the product; when several or none do, the one app (among those, or among all) that has a
    /// key. An optional `bundleId` in the body settles it outright.
    package func chooseApp(productId: String, bundleId: String?) throws(ServiceError) -> (String, OfferSigner) {
        let chosen: String
        if let bundleId {
            chosen = bundleId
        } else {
            let selling = apps.filter { $0.products[productId] != nil }.map(\.bundleId)
            if selling.count == 1 {
                chosen = selling[0]
            } else {
                let pool = selling.isEmpty ? apps.map(\.bundleId) : selling
                let keyed = pool.filter { signers($0) != nil }
                guard keyed.count == 1 else {
                    if keyed.isEmpty {
                        throw .serverAPINotConfigured(
                            "no app with a serverAPI key sells \(productId) (apps: \(pool.joined(separator: ", ")))")
                    }
                    throw .invalidRequest(
                        "productId \(productId) could be signed by \(keyed.joined(separator: ", ")): send bundleId")
                }
                chosen = keyed[0]
            }
        }
        guard apps.contains(where: { $0.bundleId == chosen }), let signer = signers(chosen) else {
            throw .serverAPINotConfigured("\(chosen) has no serverAPI key (issuerId, keyId, privateKeyFile) configured")
        }
        return (chosen, signer)
    }

    /// A body field holding an id: a string of 1–256 bytes without control characters (the
    /// OpenAPI document's `Identifier`); absent is nil unless `required`.
    package static func identifier(_ body: [String: JSONValue], _ field: String, required: Bool = true)
        throws(ServiceError) -> String?
    {
        guard let value = body[field] else {
            if required { throw .invalidRequest("\(field) is required") }
            return nil
        }
        guard let text = value.stringValue else { throw .invalidRequest("\(field) must be a string") }
        guard !text.isEmpty, text.utf8.count <= 256 else {
            throw .invalidRequest("\(field) must be a non-empty string of at most 256 bytes")
        }
        guard !RouteParameters.hasControlCharacters(text) else {
            throw .invalidRequest("\(field) must not contain control characters")
        }
        return text
    }
}
