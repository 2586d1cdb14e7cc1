import AppStore
import HTTP
import Infrastructure
import JSON

extension APIRoutes {
    /// `POST /v1/users/{userId}/sync` (api.md §5): restore or import a user's purchases by
    /// asking Apple. Answers in the shape of `POST /v1/purchases`, plus where Apple found them.
    func registerSync(on router: inout Router) {
        router.add("POST", "/v1/users/{userId}/sync", scope: "write") { request, parameters in
            respond(request) { () throws(ServiceError) in
                let userId = try userIdParameter(parameters["userId"])
                let body = try jsonObject(request)
                let transactionIdField = try optionalString(body, "transactionId")
                let receipt = try optionalString(body, "receipt")
                guard (transactionIdField == nil) != (receipt == nil) else {
                    throw .invalidRequest("send exactly one of transactionId or receipt")
                }
                let transactionId: String
                if let given = transactionIdField {
                    transactionId = given
                } else {
                    transactionId = try Self.transactionId(inReceipt: receipt!)
                }
                guard !transactionId.isEmpty, transactionId.utf8.count <= 64,
                    transactionId.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
                else { throw .invalidRequest("transactionId must be Apple's decimal transaction id (1–64 digits)") }
                let synced = try apple.sync(
                    userId: userId, transactionId: transactionId, context: context(request, source: "sync"))
                for (_, recorded) in synced.outcome.transactions {
                    metrics.ingest.increment(["sync", recorded ? "recorded" : "duplicate"])
                }
                return .json(
                    200,
                    Self.purchaseAnswer(userId: userId, synced.outcome) { writer in
                        writer.key("bundleId")
                        writer.string(synced.bundleId)
                        writer.key("environment")
                        writer.string(synced.environment)
                        writer.key("fetched")
                        writer.int(Int64(synced.fetched))
                    })
            }
        }
    }

    /// The id a StoreKit 1 receipt names, read locally (no verifyReceipt): a receipt that is not
    /// one is a 400; one without an in-app purchase names nothing to sync (422).
    static func transactionId(inReceipt receipt: String) throws(ServiceError) -> String {
        let found: String?
        do { found = try AppReceipt.transactionId(receipt) } catch { throw .invalidRequest(error.description) }
        guard let found else {
            throw .verificationFailed(
                VerificationError(.malformed, "the receipt holds no in-app purchase: it names no transaction to sync"))
        }
        return found
    }
}
