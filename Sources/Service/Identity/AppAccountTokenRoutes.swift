import HTTP
import JSON

/// `POST /v1/users/{userId}/app-account-token` (write, api.md §7): the user's token for
/// StoreKit's `appAccountToken` purchase option, minted once, or one the app already uses; and
/// `PUT /v1/subscriptions/{originalTransactionId}/app-account-token` (admin, api.md §8): Apple's
/// Set App Account Token for an old purchase, registered for the chain's owner.
struct AppAccountTokenRoutes: Sendable {
    let service: LedgerService
    /// The API key's name, recorded in the event's metadata.
    let keyNames: @Sendable (HTTPRequest) -> String?

    func register(on router: inout Router) {
        router.add("POST", "/v1/users/{userId}/app-account-token", scope: "write") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let userId = try APIRoutes.validUserId(parameters["userId"])
                let requested = try AppAccountToken.parseRequest(request.body)
                let context = RequestContext(
                    requestId: request.requestId, keyName: keyNames(request), source: "app-account-token")
                let outcome = try service.run(
                    RegisterAppAccountToken(userId: userId, register: requested), context: context)
                service.logger.info(
                    "app account token",
                    [
                        "request.id": request.requestId,
                        "result": outcome.recorded ? (requested == nil ? "minted" : "registered") : "unchanged",
                    ])
                var writer = JSONWriter(capacity: 128 + outcome.userId.utf8.count)
                writer.beginObject()
                writer.key("userId")
                writer.string(outcome.userId)
                writer.key("appAccountToken")
                writer.string(outcome.appAccountToken)
                writer.endObject()
                return .json(200, writer.bytes)
            }
        }
        // api.md §8: support sets the token of an old purchase at Apple, and it becomes its owner's.
        router.add("PUT", "/v1/subscriptions/{originalTransactionId}/app-account-token", scope: "admin") {
            request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let otid = try ExtendRoutes.originalTransactionId(parameters["originalTransactionId"])
                guard let token = try AppAccountToken.parseRequest(request.body) else {
                    throw .invalidRequest("appAccountToken is required: {\"appAccountToken\": \"<UUID>\"}")
                }
                let context = RequestContext(
                    requestId: request.requestId, keyName: keyNames(request), source: "set-app-account-token")
                let outcome = try service.setAppAccountToken(
                    originalTransactionId: otid, token: token, context: context)
                service.logger.info(
                    "set app account token", ["request.id": request.requestId, "originalTransactionId": otid])
                let customer = try service.customer(userId: outcome.owner)
                var writer = JSONWriter(capacity: 256 + customer.count)
                writer.beginObject()
                writer.key("originalTransactionId")
                writer.string(otid)
                writer.key("userId")
                writer.string(outcome.owner)
                writer.key("appAccountToken")
                writer.string(outcome.appAccountToken)
                writer.key("environment")
                writer.string(outcome.environment)
                writer.key("customer")
                writer.raw(customer)
                writer.endObject()
                return .json(200, writer.bytes)
            }
        }
    }
}
