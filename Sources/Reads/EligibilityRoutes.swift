import HTTP
import Infrastructure
import JSON

/// `GET /v1/users/{userId}/eligibility?productId=P` (read, api.md §8): may the user get P's
/// introductory offer, as Apple decides it — the answer a paywall needs before it shows one.
package struct EligibilityRoutes: Sendable {
    package let reads: CustomerReads
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { reads.ledger }

    package init(reads: CustomerReads) {
        self.reads = reads
    }

    package func register(on router: inout Router) {
        router.add("GET", "/v1/users/{userId}/eligibility", scope: "read") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let userId = try RouteParameters.validUserId(parameters["userId"])
                guard let productId = request.query["productId"], !productId.isEmpty, productId.utf8.count <= 256,
                    productId.unicodeScalars.allSatisfy({ $0.value > 0x1F && $0.value != 0x7F })
                else { throw .invalidRequest("productId is required: 1–256 bytes, no control characters") }
                let (answer, group) = try reads.eligibility(userId: userId, productId: productId)
                var writer = JSONWriter(capacity: 192)
                writer.beginObject()
                writer.key("productId")
                writer.string(productId)
                writer.key("introductoryOffer")
                writer.bool(answer.eligible)
                writer.key("reason")
                writer.string(answer.reason.rawValue)
                writer.key("group")
                writer.stringOrNull(group)
                writer.key("sameAppleAccountAs")
                writer.stringOrNull(answer.sameAppleAccountAs)
                writer.endObject()
                return .json(200, writer.bytes)
            }
        }
    }
}
