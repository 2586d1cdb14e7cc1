import HTTP
import Infrastructure
import JSON

/// `POST /v1/users/{userId}/app-account-token` (write, api.md §7): the user's token for
/// StoreKit's `appAccountToken` purchase option, minted once, or one the app already uses.
package struct AppAccountTokenRoutes: Sendable {
    package let service: LedgerService
    /// The API key's name, recorded in the event's metadata.
    package let keyNames: @Sendable (HTTPRequest) -> String?

    package init(service: LedgerService, keyNames: @escaping @Sendable (HTTPRequest) -> String?) {
        self.service = service
        self.keyNames = keyNames
    }

    package func register(on router: inout Router) {
        router.add("POST", "/v1/users/{userId}/app-account-token", scope: "write") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let userId = try RouteParameters.validUserId(parameters["userId"])
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
    }
}
