import JSON

/// What the test store has minted (`<data-dir>/testkit/state.json`), so a notification continues
/// the chain a purchase started: a renewal follows the latest period, a refund revokes the
/// transaction the service recorded. Payloads are kept as they were last signed.
struct TestkitState: Sendable, Equatable {
    /// The next transaction id: 2000000001 in a new store, so a walkthrough can name its ids.
    var nextId: Int64 = 2_000_000_001
    /// Every minted transaction payload, in minting order.
    var transactions: [[String: JSONValue]] = []
    /// The latest renewal info payload per originalTransactionId (auto-renewable chains only).
    var renewals: [String: [String: JSONValue]] = [:]
    /// The chains (originalTransactionIds) bought with `testkit receipt`, per user: that user's
    /// app receipt holds them, with every renewal since.
    var receiptChains: [String: [String]] = [:]

    mutating func takeId() -> String {
        defer { nextId += 1 }
        return String(nextId)
    }

    /// The transactions of one chain, oldest first.
    func chain(_ originalTransactionId: String) -> [Int] {
        transactions.indices.filter { transactions[$0]["originalTransactionId"]?.stringValue == originalTransactionId }
    }

    func json() -> JSONValue {
        .object([
            "nextId": .int(nextId),
            "transactions": .array(transactions.map(JSONValue.object)),
            "renewals": .object(renewals.mapValues(JSONValue.object)),
            "receiptChains": .object(receiptChains.mapValues { .array($0.map(JSONValue.string)) }),
        ])
    }

    init() {}

    /// Reads a state file; nil when it is not one (the caller names the file).
    init?(json: JSONValue) {
        guard let next = json["nextId"]?.int64Value, let list = json["transactions"]?.arrayValue,
              let renewalMap = json["renewals"]?.objectValue
        else { return nil }
        let transactions = list.compactMap(\.objectValue)
        let renewals = renewalMap.compactMapValues(\.objectValue)
        guard transactions.count == list.count, renewals.count == renewalMap.count else { return nil }
        // Absent in a store made before `testkit receipt` existed.
        if let chains = json["receiptChains"] {
            guard let map = chains.objectValue else { return nil }
            for (user, list) in map {
                guard let ids = list.arrayValue?.compactMap(\.stringValue), ids.count == list.arrayValue?.count else { return nil }
                receiptChains[user] = ids
            }
        }
        nextId = next
        self.transactions = transactions
        self.renewals = renewals
    }
}
