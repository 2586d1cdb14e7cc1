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
        nextId = next
        self.transactions = transactions
        self.renewals = renewals
    }
}
