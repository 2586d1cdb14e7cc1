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
    /// Whose each chain (originalTransactionId) is: the `--user` of the purchase or receipt that
    /// began it. `testkit apple` answers a transaction's history with its user's chains only.
    var customers: [String: String] = [:]
    /// Every notification `testkit notify` minted, signed, oldest first (posted or not): what
    /// `testkit apple` lists in Get Notification History.
    var notifications: [String] = []
    /// The renewal-date extensions `testkit apple` granted (Extend a Subscription Renewal Date),
    /// by `<originalTransactionId> <requestIdentifier>`: the new renewal date. Apple takes the
    /// request identifier as the extension's identity, so asking again extends nothing more.
    var extensions: [String: Int64] = [:]

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
            "customers": .object(customers.mapValues(JSONValue.string)),
            "notifications": .array(notifications.map(JSONValue.string)),
            "extensions": .object(extensions.mapValues(JSONValue.int)),
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
                guard let ids = list.arrayValue?.compactMap(\.stringValue), ids.count == list.arrayValue?.count else {
                    return nil
                }
                receiptChains[user] = ids
            }
        }
        // Absent in a store made before `testkit apple` served the Server API.
        if let map = json["customers"] {
            guard let entries = map.objectValue else { return nil }
            customers = entries.compactMapValues(\.stringValue)
            guard customers.count == entries.count else { return nil }
        }
        if let list = json["notifications"] {
            guard let items = list.arrayValue else { return nil }
            notifications = items.compactMap(\.stringValue)
            guard notifications.count == items.count else { return nil }
        }
        // Absent in a store made before `testkit apple` extended renewal dates.
        if let map = json["extensions"] {
            guard let entries = map.objectValue else { return nil }
            extensions = entries.compactMapValues(\.int64Value)
            guard extensions.count == entries.count else { return nil }
        }
        nextId = next
        self.transactions = transactions
        self.renewals = renewals
    }
}
