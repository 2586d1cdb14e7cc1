import Foundation
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
        Self.raise(&chainLastSeq[otid, default: 0], to: seq)
        if tracking, let owner = owners[otid] { touched.insert(owner) }
    }

    private mutating func applyUser(_ userId: String, _ event: LedgerEvent, seq: Int64) {
        Account.evolve(&accounts[userId, default: .initial], event)
        Self.raise(&accountLastSeq[userId, default: 0], to: seq)
        if tracking { touched.insert(userId) }
    }

    /// In place through the dictionary's modify accessor: one lookup, not a read and a write.
    @inline(__always) private static func raise(_ value: inout Int64, to seq: Int64) {
        if seq > value { value = seq }
    }

    /// Folds a batch, in order. Outside catch-up the chains (Apple facts) and the users'
    /// streams (claims, debits, grants) are independent: chain events touch only `chains`, user
    /// events everything else, so the two halves fold on two threads, each in log order.
    mutating func apply(_ batch: [(seq: Int64, event: LedgerEvent)]) {
        guard !tracking, batch.count >= 1024, ReplayEngine.parallelism > 1 else {
            for (seq, event) in batch { apply(event, seq: seq) }
            return
        }
        // Each half takes its dictionaries out (so they stay uniquely referenced: no copy).
        let halves = Halves()
        swap(&halves.chains.chains, &chains)
        swap(&halves.chains.chainLastSeq, &chainLastSeq)
        swap(&halves.users, &self)
        DispatchQueue.concurrentPerform(iterations: 2) { half in halves.fold(batch, chainEvents: half == 0) }
        swap(&halves.users, &self)
        swap(&halves.chains.chains, &chains)
        swap(&halves.chains.chainLastSeq, &chainLastSeq)
        events += halves.chains.events
    }

    fileprivate static func isChainEvent(_ event: LedgerEvent) -> Bool {
        switch event {
        case .transactionRecorded, .renewalInfoRecorded, .notificationReceived: true
        case .chainClaimed, .chainReleased, .balanceDebited, .balanceCredited, .entitlementGranted,
            .entitlementRevoked: false
        }
    }

    /// The two halves of a parallel fold, each touched by one thread only.
    private final class Halves: @unchecked Sendable {
        var chains = ReplayState()
        var users = ReplayState()

        func fold(_ batch: [(seq: Int64, event: LedgerEvent)], chainEvents: Bool) {
            var state = ReplayState()
            if chainEvents { swap(&state, &chains) } else { swap(&state, &users) }
            // By index: the other half's events are only looked at, not copied out.
            for index in batch.indices where ReplayState.isChainEvent(batch[index].event) == chainEvents {
                state.apply(batch[index].event, seq: batch[index].seq)
            }
            if chainEvents { swap(&state, &chains) } else { swap(&state, &users) }
        }
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
        return (customer.jsonBytes(), CustomerView.nextChange(account: account, chains: chains, catalog: catalog, after: now), version)
    }
}
