@testable import Ledger

/// An in-memory ledger for tests: routes decided events to their streams exactly as the
/// Service would, and judges the user document at any instant.
struct World {
    /// The fold the Service uses; each logged event's sequence number is its place in `log`.
    var ledger = LedgerWorld()
    var chains: [String: ChainState] { ledger.chains }
    var accounts: [String: Account] { ledger.accounts }
    /// Each user's stream version (the events on `user:<id>`).
    var versions: [String: Int64] { ledger.accountPositions.mapValues(\.version) }
    var unattached: [NotificationFact] = []
    var catalog = F.catalog
    var log: [LedgerEvent] = []

    /// Records a verified Apple fact; returns what was decided.
    @discardableResult
    mutating func record(_ command: ChainCommand) -> [LedgerEvent] {
        let otid: String?
        switch command {
        case .recordTransaction(let t), .recordTransactionCopy(let t): otid = t.originalTransactionId
        case .recordRenewalInfo(let r), .recordRenewalInfoCopy(let r): otid = r.originalTransactionId
        case .recordNotification(let n): otid = n.originalTransactionId
        }
        guard let otid else {
            if case .recordNotification(let n) = command, !unattached.contains(n) {
                unattached.append(n)
                return [.notificationReceived(n)]
            }
            return []
        }
        let events = Chain.decide(command, chains[otid] ?? .initial)
        apply(events)
        return events
    }

    @discardableResult mutating func record(_ t: Transaction) -> [LedgerEvent] { record(.recordTransaction(t)) }
    @discardableResult mutating func record(_ r: RenewalInfo) -> [LedgerEvent] { record(.recordRenewalInfo(r)) }
    @discardableResult mutating func record(_ n: NotificationFact) -> [LedgerEvent] { record(.recordNotification(n)) }

    /// A notification as it reaches the Service: the notification itself plus the signed
    /// transaction and renewal info it carries, each a fact of its own.
    mutating func notify(_ n: NotificationFact, transaction: Transaction? = nil, renewal: RenewalInfo? = nil) {
        record(n)
        if let transaction { record(transaction) }
        if let renewal { record(renewal) }
    }

    func owner(of otid: String) -> String? {
        accounts.first { $0.value.chains.contains(otid) }?.key
    }

    @discardableResult
    mutating func claim(_ otid: String, for user: String, policy: TransferPolicy = .transfer, at: Int64 = F.t0)
        throws(Rejection) -> [LedgerEvent]
    {
        let events = try Account.decide(
            .claim(userId: user, originalTransactionId: otid, policy: policy, at: at), accounts[user] ?? .initial,
            context: AccountContext(chainOwner: owner(of: otid)))
        apply(events)
        return events
    }

    func balance(_ user: String, _ currency: String) -> Int64 {
        CustomerView.balance(of: currency, account: accounts[user] ?? .initial, chains: chains, catalog: catalog)
    }

    @discardableResult
    mutating func debit(_ user: String, _ currency: String, _ amount: Int64, key: String, at: Int64 = F.t0)
        throws(Rejection) -> [LedgerEvent]
    {
        let events = try Account.decide(
            .debit(userId: user, currency: currency, amount: amount, idempotencyKey: key, reason: "test", at: at),
            accounts[user] ?? .initial, context: AccountContext(balance: balance(user, currency)))
        apply(events)
        return events
    }

    @discardableResult
    mutating func command(_ user: String, _ command: AccountCommand) throws(Rejection) -> [LedgerEvent] {
        let events = try Account.decide(command, accounts[user] ?? .initial)
        apply(events)
        return events
    }

    mutating func apply(_ events: [LedgerEvent]) {
        for event in events {
            log.append(event)
            ledger.apply(event, seq: Int64(log.count))
        }
    }

    func customer(_ user: String = "u-1", at now: Int64) -> Customer {
        CustomerView.build(
            userId: user, account: accounts[user] ?? .initial, chains: chains, catalog: catalog, at: now,
            version: ledger.accountPositions[user]?.version ?? 0)
    }

    func status(_ otid: String = "1000", at now: Int64) -> SubscriptionStatus? {
        chains[otid]?.status(at: now)?.status
    }

    func pro(_ user: String = "u-1", at now: Int64) -> Bool {
        customer(user, at: now).entitlements["pro"]?.active ?? false
    }
}

/// given(facts).when(fact).then(events) for the chain decider.
func given(_ facts: [ChainCommand]) -> ChainState {
    var state = ChainState.initial
    for fact in facts { for event in Chain.decide(fact, state) { Chain.evolve(&state, event) } }
    return state
}

extension ChainState {
    func when(_ command: ChainCommand) -> [LedgerEvent] { Chain.decide(command, self) }
}
