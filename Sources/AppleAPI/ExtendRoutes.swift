import AppStore
import HTTP
import Infrastructure
import JSON
import Reads

/// `POST /v1/subscriptions/{originalTransactionId}/extend` (admin, api.md §5): support extends a
/// subscriber's renewal date through Apple (an outage, a goodwill gesture); the outcome is recorded.
package struct ExtendRoutes: Sendable {
    package let apple: AppleRequests
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { apple.ledger }
    package let reads: CustomerReads

    package init(apple: AppleRequests, reads: CustomerReads) {
        self.apple = apple
        self.reads = reads
    }

    package func register(on router: inout Router) {
        router.add("POST", "/v1/subscriptions/{originalTransactionId}/extend", scope: "admin") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let otid = try RouteParameters.originalTransactionId(parameters["originalTransactionId"])
                let extensionRequest = try Self.body(request.body)
                let outcome = try apple.extendRenewalDate(
                    originalTransactionId: otid, request: extensionRequest,
                    context: RequestContext(requestId: request.requestId, source: "extend"))
                let record = outcome.record
                service.logger.info(
                    "extend",
                    [
                        "request.id": request.requestId, "originalTransactionId": otid,
                        "days": String(record.extendByDays),
                        "outcome": record.outcome.rawValue,
                    ])
                // The owner's document after the read-back, so support sees the new expiresAt at once
                // (api.md §5); null while nobody has claimed the chain.
                let customer = try outcome.owner.map { owner throws(ServiceError) in
                    try reads.customer(userId: owner)
                }
                var writer = JSONWriter(capacity: 256 + (customer?.count ?? 0))
                writer.beginObject()
                writer.key("originalTransactionId")
                writer.string(otid)
                writer.key("success")
                writer.bool(record.outcome == .accepted)
                writer.key("outcome")
                writer.string(record.outcome.rawValue)
                writer.key("requestId")
                writer.string(record.requestIdentifier)
                writer.key("days")
                writer.int(record.extendByDays)
                writer.key("reason")
                writer.int(record.extendReasonCode)
                if let environment = record.environment {
                    writer.key("environment")
                    writer.string(environment)
                }
                if let date = record.effectiveDate {
                    writer.key("effectiveDate")
                    writer.string(RFC3339.format(date))
                }
                if let id = record.webOrderLineItemId {
                    writer.key("webOrderLineItemId")
                    writer.string(id)
                }
                writer.key("refreshed")
                writer.bool(outcome.refreshed)
                writer.key("customer")
                if let customer { writer.raw(customer) } else { writer.null() }
                writer.endObject()
                return .json(200, writer.bytes)
            }
        }
    }

    /// `{"days": 1…90, "reason": 0…3 (default 0), "requestId": 1…128 characters}`.
    package static func body(_ body: [UInt8]) throws(ServiceError) -> RenewalDateExtension {
        guard let value = try? JSONValue.parse(body), case .object(let fields) = value else {
            throw .invalidRequest("the body must be a JSON object with days (1…90) and requestId")
        }
        for name in fields.keys.sorted() where !["days", "reason", "requestId"].contains(name) {
            throw .invalidRequest("unknown field \(name) (expected days, reason, requestId)")
        }
        func integer(_ name: String, _ range: ClosedRange<Int64>) throws(ServiceError) -> Int64? {
            guard let field = fields[name] else { return nil }
            guard case .number(let lexeme) = field, let number = Int64(lexeme), range.contains(number) else {
                throw .invalidRequest("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        guard let days = try integer("days", 1...90) else { throw .invalidRequest("days is required (1…90)") }
        let reason = try integer("reason", 0...3) ?? 0
        guard let field = fields["requestId"] else {
            throw .invalidRequest("requestId is required: Apple's idempotency key for this extension")
        }
        guard let requestId = field.stringValue, !requestId.isEmpty, requestId.unicodeScalars.count <= 128,
            !RouteParameters.hasControlCharacters(requestId)
        else { throw .invalidRequest("requestId must be a string of 1…128 characters without control characters") }
        return RenewalDateExtension(
            extendByDays: Int(days), extendReasonCode: Int(reason), requestIdentifier: requestId)
    }
}
