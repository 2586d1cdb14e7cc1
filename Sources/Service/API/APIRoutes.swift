import AppStore
import AppleAPI
import HTTP
import Infrastructure
import Ingest
import JSON
import Ledger
import Reads

/// The HTTP API of docs/api.md §2: parses requests, calls the use cases, maps errors in one place.
struct APIRoutes: Sendable {
    let reads: CustomerReads
    /// The shell, as the room's use cases hold it.
    var service: LedgerService { reads.ledger }
    let ingestion: Ingestion
    let apple: AppleRequests
    let metrics: ServiceMetrics
    let keyNames: @Sendable (HTTPRequest) -> String?
    /// Where the cached user read sends what it must read from PostgreSQL (the router's pool).
    let handlers: HandlerPool

    func register(on router: inout Router) {
        router.add("POST", "/v1/purchases", scope: "write") { request, _ in
            respond(request) { () throws(ServiceError) in
                try counted("purchase", requestId: request.requestId) { () throws(ServiceError) in
                    try postPurchase(request)
                }
            }
        }
        router.add("POST", "/v1/notifications/apple") { request, _ in
            respond(request) { () throws(ServiceError) in
                try counted("notification", requestId: request.requestId) { () throws(ServiceError) in
                    try postNotification(request)
                }
            }
        }
        // Inline: a read the cache answers waits for its check without holding a thread, and
        // only what must read PostgreSQL (a miss, `asOf`) goes to the handler pool.
        router.add("GET", "/v1/users/{userId}", scope: "read", inline: true) { request, parameters in
            respond(request) { () throws(ServiceError) in
                let userId = try userIdParameter(parameters["userId"])
                if let asOf = request.query["asOf"] {
                    guard let instant = RFC3339.parse(asOf) else {
                        throw .invalidRequest("asOf must be an RFC 3339 timestamp, got \"\(asOf)\"")
                    }
                    return handlers.run {
                        respond(request) { () throws(ServiceError) in
                            .json(200, try reads.customer(userId: userId, asOf: instant))
                        }
                    }
                }
                let deferred = HTTPDeferred(completedByOwner: ())
                reads.customer(userId: userId, offload: handlers) { result in
                    deferred.complete(respond(request) { () throws(ServiceError) in .json(200, try result.get()) })
                }
                return .deferred(deferred)
            }
        }
        router.add("GET", "/v1/users/{userId}/events", scope: "read") { request, parameters in
            respond(request) { () throws(ServiceError) in
                let userId = try userIdParameter(parameters["userId"])
                let after = try integerQuery(request, "after", default: 0, range: 0...Int64.max)
                let limit = try integerQuery(request, "limit", default: 100, range: 1...1000)
                // `before` pages backwards (newest first), still above `after`: a window of seqs.
                let before =
                    request.query["before"] == nil
                    ? nil : try integerQuery(request, "before", default: 0, range: 1...Int64.max)
                return .json(
                    200, try reads.events(userId: userId, after: after, before: before, limit: Int(limit)))
            }
        }
        router.add("GET", "/v1/subscriptions/{originalTransactionId}", scope: "read") { request, parameters in
            respond(request) { () throws(ServiceError) in
                guard let otid = parameters["originalTransactionId"], !otid.isEmpty else {
                    throw .invalidRequest("originalTransactionId is required")
                }
                return .json(200, try reads.subscription(originalTransactionId: otid))
            }
        }
        router.add("POST", "/v1/users/{userId}/balances/{currency}/debit", scope: "write") { request, parameters in
            respond(request) { () throws(ServiceError) in try postDebit(request, parameters) }
        }
        registerSync(on: &router)
    }

    /// Runs a handler body and turns any typed error into its problem+json response.
    func respond(_ request: HTTPRequest, _ body: () throws(ServiceError) -> HTTPResponse) -> HTTPResponse {
        ErrorMapping.respond(service.logger, request, body)
    }

    /// Counts a failed ingest by its rejection reason (or error code) before it is mapped.
    private func counted(_ kind: String, requestId: String, _ body: () throws(ServiceError) -> HTTPResponse)
        throws(ServiceError) -> HTTPResponse
    {
        do {
            return try body()
        } catch {
            let result: String =
                switch error {
                case .verificationFailed(let failure): failure.reason.rawValue
                case .receiptRejected: "receipt_rejected"
                case .invalidRequest: "invalid_request"
                case .rejected(let rejection): rejection.code
                case .appleUnavailable: "apple_unavailable"
                case .storeUnavailable: "store_unavailable"
                default: "error"
                }
            metrics.ingest.increment([kind, result])
            // Counted and logged, never with the payload (it may carry a receipt or a signed
            // transaction): the reason and the request id are what an on-call engineer greps for.
            service.logger.info("ingest rejected", ["kind": kind, "reason": result, "request.id": requestId])
            throw error
        }
    }

    func context(_ request: HTTPRequest, source: String) -> RequestContext {
        RequestContext(requestId: request.requestId, keyName: keyNames(request), source: source)
    }

    private func postPurchase(_ request: HTTPRequest) throws(ServiceError) -> HTTPResponse {
        let body = try jsonObject(request)
        let userId = try userIdParameter(try optionalString(body, "userId"), field: "userId")
        let signed = try optionalString(body, "signedTransaction")
        let receipt = try optionalString(body, "receipt")
        guard (signed == nil) != (receipt == nil) else {
            throw .invalidRequest("send exactly one of signedTransaction (StoreKit 2) or receipt (StoreKit 1)")
        }
        if signed?.isEmpty == true { throw .invalidRequest("signedTransaction must not be empty") }
        var batch = FactBatch()
        if let signed {
            let verified: JWSTransaction
            do { verified = try service.verifier.verifyTransaction(signed) } catch { throw .verificationFailed(error) }
            batch.transactions = [(try FactMapping.transaction(verified), signed)]
        } else if let receipt {
            batch = try ingestion.verifyReceipt(receipt)
        }
        let outcome = try ingestion.ingest(
            batch, claimant: userId, context: context(request, source: signed != nil ? "purchase" : "receipt"))
        for (_, recorded) in outcome.transactions {
            metrics.ingest.increment([signed != nil ? "transaction" : "receipt", recorded ? "recorded" : "duplicate"])
        }
        return .json(200, Self.purchaseAnswer(userId: userId, outcome))
    }

    /// The answer of `POST /v1/purchases` (and of a sync, which has its shape): each
    /// transaction's result, and the user's document after the write.
    static func purchaseAnswer(userId: String, _ outcome: IngestOutcome, extra: (inout JSONWriter) -> Void = { _ in })
        -> [UInt8]
    {
        var writer = JSONWriter(capacity: 1024)
        writer.beginObject()
        writer.key("userId")
        writer.string(outcome.claimant ?? userId)  // an alias answers as its target
        writer.key("transactions")
        writer.beginArray()
        for (fact, recorded) in outcome.transactions {
            writer.beginObject()
            writer.key("transactionId")
            writer.string(fact.transactionId)
            writer.key("originalTransactionId")
            writer.string(fact.originalTransactionId)
            writer.key("productId")
            writer.string(fact.productId)
            writer.key("result")
            writer.string(recorded ? "recorded" : "duplicate")
            // A restored purchase that moved here says so, even when the fact itself was known.
            if let previous = outcome.transferredFrom[fact.originalTransactionId] {
                writer.key("transferredFrom")
                writer.string(previous)
            }
            writer.endObject()
        }
        writer.endArray()
        extra(&writer)
        writer.key("customer")
        writer.raw(outcome.customer ?? Array("null".utf8))
        writer.endObject()
        return writer.bytes
    }

    private func postNotification(_ request: HTTPRequest) throws(ServiceError) -> HTTPResponse {
        let body = try jsonObject(request)
        guard let signedPayload = body["signedPayload"]?.stringValue, !signedPayload.isEmpty else {
            throw .invalidRequest("signedPayload is required")
        }
        let batch = try ingestion.verifyNotification(signedPayload)
        let outcome = try ingestion.ingest(
            batch, claimant: nil, context: context(request, source: "notification"))
        let fact = batch.notification!.fact
        metrics.ingest.increment(["notification", outcome.notificationRecorded ? "recorded" : "duplicate"])
        if outcome.notificationRecorded {
            metrics.notificationTypes.increment([fact.notificationType, fact.subtype ?? ""])
        }
        var writer = JSONWriter(capacity: 96)
        writer.beginObject()
        writer.key("notificationUUID")
        writer.string(batch.notification!.fact.notificationUUID)
        writer.key("result")
        writer.string(outcome.notificationRecorded ? "recorded" : "duplicate")
        writer.endObject()
        return .json(200, writer.bytes)
    }

    private func postDebit(_ request: HTTPRequest, _ parameters: Parameters) throws(ServiceError) -> HTTPResponse {
        let userId = try userIdParameter(parameters["userId"])
        guard let currency = parameters["currency"], !currency.isEmpty, currency.utf8.count <= 64,
            !RouteParameters.hasControlCharacters(currency)
        else { throw .invalidRequest("currency must be 1–64 bytes without control characters") }
        let body = try jsonObject(request)
        guard let amountValue = body["amount"], case .number(let lexeme) = amountValue, let amount = Int64(lexeme),
            amount > 0
        else { throw .invalidRequest("amount must be a positive integer") }
        guard let key = body["idempotencyKey"]?.stringValue, !key.isEmpty, key.utf8.count <= 200 else {
            throw .invalidRequest("idempotencyKey is required (1–200 bytes)")
        }
        let reason = try optionalString(body, "reason") ?? ""
        let outcome = try service.run(
            Debit(userId: userId, currency: currency, amount: amount, idempotencyKey: key, reason: reason),
            context: context(request, source: "debit"))
        var writer = JSONWriter(capacity: 64 + outcome.userId.utf8.count)
        writer.beginObject()
        writer.key("balance")
        writer.int(outcome.balance)
        writer.key("result")
        writer.string(outcome.duplicate ? "duplicate" : "debited")
        // Through an alias (api.md §7), the answer names the user debited; otherwise it is the one named.
        if outcome.userId != userId {
            writer.key("userId")
            writer.string(outcome.userId)
        }
        writer.endObject()
        return .json(200, writer.bytes)
    }

    func jsonObject(_ request: HTTPRequest) throws(ServiceError) -> [String: JSONValue] {
        let value: JSONValue
        do { value = try JSONValue.parse(request.body) } catch {
            throw .invalidRequest("the body is not valid JSON: \(error)")
        }
        guard let object = value.objectValue else { throw .invalidRequest("the body must be a JSON object") }
        return object
    }

    func userIdParameter(_ value: String?, field: String = "userId") throws(ServiceError) -> String {
        try RouteParameters.validUserId(value, field: field)
    }

    /// A body field that, when present, must be a string (a number or null is not silently "absent").
    func optionalString(_ body: [String: JSONValue], _ field: String) throws(ServiceError) -> String? {
        guard let value = body[field] else { return nil }
        guard let text = value.stringValue else { throw .invalidRequest("\(field) must be a string") }
        return text
    }

    private func integerQuery(
        _ request: HTTPRequest, _ name: String, default fallback: Int64, range: ClosedRange<Int64>
    )
        throws(ServiceError) -> Int64
    {
        guard let text = request.query[name] else { return fallback }
        guard let value = Int64(text), range.contains(value) else {
            throw .invalidRequest("\(name) must be an integer in \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }
}
