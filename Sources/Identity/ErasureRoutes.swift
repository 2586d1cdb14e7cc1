import HTTP
import Infrastructure
import JSON

/// `DELETE /v1/users/{userId}` (admin, api.md §7): erases a person (`Identities.erase`).
/// 200 `{"erased": true}`, the first time and every time after.
package struct ErasureRoutes: Sendable {
    package let identities: Identities
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { identities.ledger }
    /// The API key's name, recorded in the erasure event's metadata.
    package let keyNames: @Sendable (HTTPRequest) -> String?

    package init(identities: Identities, keyNames: @escaping @Sendable (HTTPRequest) -> String?) {
        self.identities = identities
        self.keyNames = keyNames
    }

    package func register(on router: inout Router) {
        router.add("DELETE", "/v1/users/{userId}", scope: "admin") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let userId = try RouteParameters.validUserId(parameters["userId"])
                let context = RequestContext(
                    requestId: request.requestId, keyName: keyNames(request), source: "erasure")
                try identities.erase(userId: userId, context: context)
                // Never the id in the log line: the person is gone.
                service.logger.info("erasure", ["request.id": request.requestId])
                return .json(200, Array(#"{"erased":true}"#.utf8))
            }
        }
    }
}
