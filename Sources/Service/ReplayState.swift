import Ledger

/// The whole ledger folded in memory with the pure Ledger functions: every chain's state, every
/// account, who owns which chain, and the sequence numbers a document's `version` comes from.
/// It is what `LedgerRepository.loadUser` computes for one user, computed for all at once.
struct ReplayState {
    var chains: [String: ChainState] = [:]
    var chainLastSeq: [String: Int64] = [:]
    var accounts: [String: Account] = [:]
    var accountLastSeq: [String: Int64] = [:]
    /// originalTransactionId → owner, and when the claim happened (ms).
    var owners: [String: String] = [:]
    var claimedAt: [String: Int64] = [:]
    /// Users whose document or chain ownership may have changed since `touched` was last cleared
    /// (tracked only while `tracking`, i.e. during catch-up).
    var touched: Set<String> = []
    var touchedChains: Set<String> = []
    var tracking = false
    var events = 0

    mutating func apply(_ event: LedgerEvent, seq: Int64) {
        events += 1
        switch event {
        case .transactionRecorded(let transaction):
            applyChain(transaction.originalTransactionId, event, seq: seq)
        case .renewalInfoRecorded(let info):
            applyChain(info.originalTransactionId, event, seq: seq)
        case .notificationReceived(let notification):
            if let otid = notification.originalTransactionId { applyChain(otid, event, seq: seq) }
        case .chainClaimed(let userId, let otid, _, let at):
            owners[otid] = userId
            claimedAt[otid] = at
            if tracking { touchedChains.insert(otid) }
            applyUser(userId, event, seq: seq)
        case .chainReleased(let userId, let otid, _, _):
            if owners[otid] == userId { owners[otid] = nil }
            if tracking { touchedChains.insert(otid) }
            applyUser(userId, event, seq: seq)
        case .balanceDebited(let userId, _, _, _, _, _, _), .balanceCredited(let userId, _, _, _, _, _),
            .entitlementGranted(let userId, _, _, _, _), .entitlementRevoked(let userId, _, _, _):
            applyUser(userId, event, seq: seq)
        }
    }

    private mutating func applyChain(_ otid: String, _ event: LedgerEvent, seq: Int64) {
        Chain.evolve(&chains[otid, default: .initial], event)
        chainLastSeq[otid] = max(chainLastSeq[otid] ?? 0, seq)
        if tracking, let owner = owners[otid] { touched.insert(owner) }
    }

    private mutating func applyUser(_ userId: String, _ event: LedgerEvent, seq: Int64) {
        Account.evolve(&accounts[userId, default: .initial], event)
        accountLastSeq[userId] = max(accountLastSeq[userId] ?? 0, seq)
        if tracking { touched.insert(userId) }
    }

    /// The document `version` of a user: the highest sequence among their own stream and the
    /// chains they own (as `LedgerRepository.loadUser` computes it).
    func version(of userId: String) -> Int64 {
        var version = accountLastSeq[userId] ?? 0
        for otid in accounts[userId]?.chains ?? [] { version = max(version, chainLastSeq[otid] ?? 0) }
        return version
    }

    /// The user's document at `now` under `catalog`, until when it stays true, and its `version`.
    func render(_ userId: String, catalog: Catalog, at now: Int64)
        -> (document: [UInt8], validUntil: Int64?, version: Int64)
    {
        let account = accounts[userId] ?? .initial
        let version = version(of: userId)
        let customer = CustomerView.build(
            userId: userId, account: account, chains: chains, catalog: catalog, at: now, version: version)
        return (customer.jsonBytes(), CustomerView.nextChange(account: account, chains: chains, after: now), version)
    }
}
