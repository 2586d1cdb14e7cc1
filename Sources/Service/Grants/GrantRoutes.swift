import HTTP
import Infrastructure
import JSON
import Ledger

/// `POST /v1/users/{userId}/grants` and `DELETE /v1/users/{userId}/grants/{grantId}` (admin,
/// api.md §6): support gives a customer an entitlement for a while, recorded as an event.
struct GrantRoutes: Sendable {
    let service: LedgerService
    /// The API key's name, recorded in each event's metadata: who gave or ended a grant.
    let keyNames: @Sendable (HTTPRequest) -> String?

    func context(_ request: HTTPRequest, source: String) -> RequestContext {
        RequestContext(requestId: request.requestId, keyName: keyNames(request), source: source)
    }

    func register(on router: inout Router) {
        router.add("POST", "/v1/users/{userId}/grants", scope: "admin") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let userId = try RouteParameters.validUserId(parameters["userId"])
                let body = try GrantRequest.parse(
                    request.body, idempotencyHeader: request.header("Idempotency-Key"), now: service.clock())
                let grantId = GrantRequest.grantId(userId: userId, idempotencyKey: body.idempotencyKey)
                let outcome = try service.run(
                    Grant(
                        userId: userId, grantId: grantId, entitlement: body.entitlement, term: body.term,
                        reason: body.reason, idempotencyKey: body.idempotencyKey),
                    context: context(request, source: "grant"))
                service.logger.info(
                    "grant",
                    [
                        "request.id": request.requestId, "grantId": outcome.grant.grantId,
                        "entitlement": outcome.grant.entitlement, "result": outcome.created ? "granted" : "duplicate",
                    ])
                var writer = JSONWriter(capacity: 512 + outcome.customer.count)
                writer.beginObject()
                writer.key("grantId")
                writer.string(outcome.grant.grantId)
                writer.key("entitlement")
                writer.string(outcome.grant.entitlement)
                writer.key("expiresAt")
                writer.string(RFC3339.format(outcome.grant.expiresAt))
                writer.key("result")
                writer.string(outcome.created ? "granted" : "duplicate")
                writer.key("customer")
                writer.raw(outcome.customer)
                writer.endObject()
                return .json(outcome.created ? 201 : 200, writer.bytes)
            }
        }
        router.add("DELETE", "/v1/users/{userId}/grants/{grantId}", scope: "admin") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let userId = try RouteParameters.validUserId(parameters["userId"])
                guard let grantId = parameters["grantId"], GrantRequest.isGrantId(grantId) else {
                    throw .invalidRequest("grantId must be grt_ and 32 lowercase hex digits, as POST …/grants answered")
                }
                let document = try service.run(
                    RevokeGrant(userId: userId, grantId: grantId), context: context(request, source: "grant-revoke"))
                service.logger.info("grant revoke", ["request.id": request.requestId, "grantId": grantId])
                var writer = JSONWriter(capacity: 64 + document.count)
                writer.beginObject()
                writer.key("customer")
                writer.raw(document)
                writer.endObject()
                return .json(200, writer.bytes)
            }
        }
    }
}
