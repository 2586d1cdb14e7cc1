import HTTP
import JSON

extension APIRoutes {
    /// `POST /v1/users/{userId}/sync` (api.md §5): restore or import a user's purchases by
    /// asking Apple. Answers in the shape of `POST /v1/purchases`, plus where Apple found them.
    func registerSync(on router: inout Router) {
        router.add("POST", "/v1/users/{userId}/sync", scope: "write") { request, parameters in
            respond(request) { () throws(ServiceError) in
                let userId = try userIdParameter(parameters["userId"])
                let body = try jsonObject(request)
                let transactionId = try optionalString(body, "transactionId")
                let receipt = try optionalString(body, "receipt")
                guard (transactionId == nil) != (receipt == nil) else {
                    throw .invalidRequest("send exactly one of transactionId or receipt")
                }
                guard let transactionId else {
                    // Reading the id out of a receipt locally (as Apple's ReceiptUtility does) is
                    // not built yet; the id is in the app's receipt and in StoreKit's Transaction.
                    throw .invalidRequest("receipt is not supported by sync yet: send the transactionId")
                }
                guard !transactionId.isEmpty, transactionId.utf8.count <= 64,
                    transactionId.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
                else { throw .invalidRequest("transactionId must be Apple's decimal transaction id (1–64 digits)") }
                let synced = try service.sync(
                    userId: userId, transactionId: transactionId, context: context(request, source: "sync"))
                for (_, recorded) in synced.outcome.transactions {
                    metrics.ingest.increment(["sync", recorded ? "recorded" : "duplicate"])
                }
                return .json(
                    200,
                    Self.purchaseAnswer(userId: userId, synced.outcome) { writer in
                        writer.key("bundleId"); writer.string(synced.bundleId)
                        writer.key("environment"); writer.string(synced.environment)
                        writer.key("fetched"); writer.int(Int64(synced.fetched))
                    })
            }
        }
    }
}
