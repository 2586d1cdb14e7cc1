import AppleAPI
import HTTP
import Identity
import Infrastructure
import JSON

/// `GET /v1/lookup` (read, api.md §7): the user and chain behind an id support is given —
/// a transactionId, an originalTransactionId, an appAccountToken or the order ID of the
/// customer's App Store e-mail receipt.
struct LookupRoutes: Sendable {
    let identities: Identities
    /// The shell, as the room's use cases hold it.
    var service: LedgerService { identities.ledger }
    let apple: AppleRequests
    /// The API key's name, recorded in the metadata of what an order lookup records.
    let keyNames: @Sendable (HTTPRequest) -> String?

    static let parameters = ["transactionId", "originalTransactionId", "appAccountToken", "orderId"]

    func register(on router: inout Router) {
        router.add("GET", "/v1/lookup", scope: "read") { request, _ in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let key = try Self.key(request.query)
                guard case .orderId(let orderId) = key else {
                    guard let match = try identities.lookUp(key) else { throw .notFound(Self.nothing(key)) }
                    return .json(200, SupportLookup.json(match))
                }
                let context = RequestContext(requestId: request.requestId, keyName: keyNames(request), source: "lookup")
                guard let found = try apple.lookUpOrder(orderId, context: context),
                    let lead = found.transactions.first
                else { throw .notFound(Self.nothing(key)) }
                service.logger.info(
                    "order lookup",
                    [
                        "request.id": request.requestId, "bundleId": found.bundleId, "environment": found.environment,
                        "recorded": String(found.transactions.filter(\.recorded).count),
                    ])
                let match = SupportLookup.Match(userId: lead.userId, originalTransactionId: lead.originalTransactionId)
                return .json(
                    200,
                    SupportLookup.json(match) { writer in
                        writer.key("orderId")
                        writer.string(orderId)
                        writer.key("bundleId")
                        writer.string(found.bundleId)
                        writer.key("environment")
                        writer.string(found.environment)
                        writer.key("transactions")
                        writer.beginArray()
                        for item in found.transactions {
                            writer.beginObject()
                            writer.key("transactionId")
                            writer.string(item.transactionId)
                            writer.key("originalTransactionId")
                            writer.string(item.originalTransactionId)
                            writer.key("userId")
                            writer.stringOrNull(item.userId)
                            writer.key("recorded")
                            writer.bool(item.recorded)
                            writer.endObject()
                        }
                        writer.endArray()
                    })
            }
        }
    }

    /// The one id named, checked: exactly one of the four parameters, in its own form.
    static func key(_ query: [String: String]) throws(ServiceError) -> SupportLookup.Key {
        let named = parameters.filter { query[$0] != nil }
        guard named.count == 1, let name = named.first, let value = query[name] else {
            throw .invalidRequest("name exactly one of \(parameters.joined(separator: ", ")); got \(named.count)")
        }
        let bytes = Array(value.utf8)
        let digits = !bytes.isEmpty && bytes.count <= 64 && bytes.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        switch name {
        case "transactionId", "originalTransactionId":
            guard digits else { throw .invalidRequest("\(name) must be Apple's decimal id (1–64 digits)") }
            return name == "transactionId" ? .transactionId(value) : .originalTransactionId(value)
        case "appAccountToken":
            guard let token = AppAccountToken.normalized(value) else {
                throw .invalidRequest("appAccountToken must be a UUID, got \"\(value)\"")
            }
            return .appAccountToken(token)
        default:
            // Apple's order ids are letters and digits (MK5TTTVWJH); nothing else is sent to Apple.
            let alphanumeric = bytes.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
            }
            guard !bytes.isEmpty, bytes.count <= 64, alphanumeric else {
                throw .invalidRequest("orderId must be 1–64 letters and digits, as on the App Store receipt")
            }
            return .orderId(value)
        }
    }

    static func nothing(_ key: SupportLookup.Key) -> String {
        switch key {
        case .transactionId(let id): "no transaction \(id) has been recorded"
        case .originalTransactionId(let id): "no transaction chain \(id) has been recorded"
        case .appAccountToken(let token):
            "appAccountToken \(token) is neither registered nor carried by a recorded transaction"
        case .orderId(let id):
            "Apple knows no order \(id) for any app with a serverAPI key (Look Up Order ID answered status 1)"
        }
    }
}
