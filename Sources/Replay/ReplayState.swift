import Foundation
import Infrastructure
import Ledger

/// The whole ledger folded in memory (`LedgerWorld`, the same fold the write path uses), plus
/// what only a replay needs: who owns which chain and since when (the `proj.chain_owners`
/// rows), and which users a catch-up touched.
package struct ReplayState {
    package var world = LedgerWorld()
    /// originalTransactionId → owner, and when the claim happened (ms).
    package var owners: [String: String] = [:]
    package var claimedAt: [String: Int64] = [:]
    /// Users whose document or chain ownership may have changed since `touched` was last cleared
    /// (tracked only while `tracking`, i.e. during catch-up).
    package var touched: Set<String> = []
    package var touchedChains: Set<String> = []
    package var tracking = false
    package var events = 0

    package var accounts: [String: Account] { world.accounts }

    package mutating func apply(_ event: LedgerEvent, seq: Int64) {
        events += 1
        switch world.apply(event, seq: seq) {
        case .chain(let otid):
            if tracking, let owner = owners[otid] { touched.insert(owner) }
        case .user(let userId):
            if tracking { touched.insert(userId) }
            switch event {
            case .chainClaimed(_, let otid, _, let at):
                owners[otid] = userId
                claimedAt[otid] = at
                if tracking { touchedChains.insert(otid) }
            case .chainReleased(_, let otid, _, _):
                if owners[otid] == userId { owners[otid] = nil }
                if tracking { touchedChains.insert(otid) }
            case .aliasMerged(_, _, let moved, let at):
                // The alias's chains are the target's from the merge on (its MergedInto releases none).
                for otid in moved.chains {
                    owners[otid] = userId
                    claimedAt[otid] = at
                    if tracking { touchedChains.insert(otid) }
                }
            default:
                break
            }
        case .unrouted:
            break
        }
    }

    /// Folds a batch's parts, in order. Outside catch-up the chains (Apple facts) and the users'
    /// streams (claims, debits, grants) are independent: chain events touch only the chains,
    /// user events everything else, so the two halves fold on two threads, each in log order.
    package mutating func apply(_ parts: [ReplayLogReader.Batch.Events]) {
        let count = parts.reduce(0) { $0 + $1.count }
        guard !tracking, count >= 1024, ReplayEngine.parallelism > 1 else {
            for part in parts {
                part.withUnsafeBufferPointer { part in
                    for index in part.indices { apply(part[index].event, seq: part[index].seq) }
                }
            }
            return
        }
        // Each half takes its dictionaries out (so they stay uniquely referenced: no copy).
        let halves = Halves()
        swap(&halves.chains.world.chains, &world.chains)
        swap(&halves.chains.world.chainPositions, &world.chainPositions)
        swap(&halves.users, &self)
        DispatchQueue.concurrentPerform(iterations: 2) { half in halves.fold(parts, chainEvents: half == 0) }
        swap(&halves.users, &self)
        swap(&halves.chains.world.chains, &world.chains)
        swap(&halves.chains.world.chainPositions, &world.chainPositions)
        events += halves.chains.events
    }

    /// The two halves of a parallel fold, each touched by one thread only.
    private final class Halves: @unchecked Sendable {
        var chains = ReplayState()
        var users = ReplayState()

        func fold(_ parts: [ReplayLogReader.Batch.Events], chainEvents: Bool) {
            var state = ReplayState()
            if chainEvents { swap(&state, &chains) } else { swap(&state, &users) }
            // Through an unsafe buffer: its subscript lends each event where `Array`'s copies it
            // (retaining every string of a Transaction, then releasing them again).
            for part in parts {
                part.withUnsafeBufferPointer { part in
                    for index in part.indices where part[index].event.isChainEvent == chainEvents {
                        state.apply(part[index].event, seq: part[index].seq)
                    }
                }
            }
            if chainEvents { swap(&state, &chains) } else { swap(&state, &users) }
        }
    }

    /// Once `events` of a log of about `total` are folded, reserves room for the keys the whole
    /// log will need at the rate seen so far (plus a tenth): ids new to a log keep arriving at
    /// about the same rate as its events, and a wrong guess costs only a later resize.
    package mutating func reserve(extrapolatingTo total: Int) {
        guard events > 0, total > events else { return }
        func scaled(_ count: Int) -> Int { Int(Double(count) * Double(total) / Double(events) * 1.1) }
        world.reserve(chains: scaled(world.chains.count), users: scaled(world.accounts.count))
        if scaled(owners.count) > owners.capacity {
            owners.reserveCapacity(scaled(owners.count))
            claimedAt.reserveCapacity(scaled(owners.count))
        }
    }

    /// The document `version` of a user (see `LedgerWorld.version(of:)`).
    package func version(of userId: String) -> Int64 { world.version(of: userId) }

    /// Whether a stored document of `storedVersion` was rendered from events this state has not
    /// read (the service wrote after the replay's last read): it is in flight, not a difference.
    /// The one rule a replay's comparison and a catalog change's re-render both apply.
    package func isInFlight(_ userId: String, storedVersion: Int64) -> Bool { storedVersion > version(of: userId) }

    /// The user's document at `now` under `catalog`, until when it stays true, and its `version`.
    package func render(_ userId: String, catalog: Catalog, at now: Int64)
        -> (document: [UInt8], validUntil: Int64?, version: Int64)
    {
        let account = world.account(of: userId)
        let version = world.version(of: userId, account: account)
        let customer = CustomerView.build(
            userId: userId, account: account, chains: world.chains, catalog: catalog, at: now, version: version)
        return (
            customer.jsonBytes(),
            CustomerView.nextChange(account: account, chains: world.chains, catalog: catalog, after: now), version
        )
    }
}
