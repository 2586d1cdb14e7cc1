import HTTP
import Identity
import Infrastructure
import JSON
import Reads

/// `PUT /v1/subscriptions/{originalTransactionId}/app-account-token` (admin, api.md §8): Apple's
/// Set App Account Token for an old purchase, registered for the chain's owner.
package struct SetAppAccountTokenRoutes: Sendable {
    package let apple: AppleRequests
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { apple.ledger }
    package let reads: CustomerReads
    /// The API key's name, recorded in the event's metadata.
    package let keyNames: @Sendable (HTTPRequest) -> String?

    package init(
        apple: AppleRequests, reads: CustomerReads,
        keyNames: @escaping @Sendable (HTTPRequest) -> String?
    ) {
        self.apple = apple
        self.reads = reads
        self.keyNames = keyNames
    }

    package func register(on router: inout Router) {
        // api.md §8: support sets the token of an old purchase at Apple, and it becomes its owner's.
        router.add("PUT", "/v1/subscriptions/{originalTransactionId}/app-account-token", scope: "admin") {
            request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let otid = try RouteParameters.originalTransactionId(parameters["originalTransactionId"])
                guard let token = try AppAccountToken.parseRequest(request.body) else {
                    throw .invalidRequest("appAccountToken is required: {\"appAccountToken\": \"<UUID>\"}")
                }
                let context = RequestContext(
                    requestId: request.requestId, keyName: keyNames(request), source: "set-app-account-token")
                let outcome = try apple.setAppAccountToken(
                    originalTransactionId: otid, token: token, context: context)
                service.logger.info(
                    "set app account token", ["request.id": request.requestId, "originalTransactionId": otid])
                let customer = try reads.customer(userId: outcome.owner)
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
