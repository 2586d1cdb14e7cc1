import HTTP
import Infrastructure
import JSON

/// `POST /v1/users/{userId}/aliases` (write, api.md §7): another id (typically the anonymous
/// one an app used before sign-in) becomes an alias of the user, and what it had moves over.
package struct AliasRoutes: Sendable {
    package let identities: Identities
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { identities.ledger }
    /// The API key's name, recorded in the events' metadata.
    package let keyNames: @Sendable (HTTPRequest) -> String?

    package init(identities: Identities, keyNames: @escaping @Sendable (HTTPRequest) -> String?) {
        self.identities = identities
        self.keyNames = keyNames
    }

    package func register(on router: inout Router) {
        router.add("POST", "/v1/users/{userId}/aliases", scope: "write") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let userId = try RouteParameters.validUserId(parameters["userId"])
                let body: JSONValue
                do { body = try JSONValue.parse(request.body) } catch {
                    throw .invalidRequest("the body is not valid JSON: \(error)")
                }
                guard body.objectValue != nil else { throw .invalidRequest("the body must be a JSON object") }
                let alias = try RouteParameters.validUserId(body["alias"]?.stringValue, field: "alias")
                let context = RequestContext(
                    requestId: request.requestId, keyName: keyNames(request), source: "alias")
                let outcome = try identities.mergeAlias(userId: userId, alias: alias, context: context)
                service.logger.info(
                    "alias", ["request.id": request.requestId, "result": outcome.merged ? "merged" : "unchanged"])
                var writer = JSONWriter(capacity: 256 + outcome.customer.count)
                writer.beginObject()
                writer.key("userId")
                writer.string(userId)
                writer.key("aliases")
                writer.beginArray()
                for alias in outcome.aliases { writer.string(alias) }
                writer.endArray()
                writer.key("customer")
                writer.raw(outcome.customer)
                writer.endObject()
                return .json(200, writer.bytes)
            }
        }
    }
}
