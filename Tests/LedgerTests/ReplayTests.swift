import TestSupport
import Testing

@testable import Ledger

/// Projections are derived data: rebuilding them from the stored log gives what incremental
/// updates gave, and `asOf` is the fold of a prefix judged at that instant.
@Suite struct ReplayTests {
    /// Folds a log as a replay does: events grouped by stream, decoded from their stored bytes.
    func replay(_ log: [LedgerEvent]) throws -> (chains: [String: ChainState], accounts: [String: Account]) {
        var world = LedgerWorld()
        for (index, event) in log.enumerated() {
            let stored = try LedgerEvent.decode(
                type: event.typeName, schemaVersion: event.schemaVersion,
                data: event.encode())
            world.apply(stored, seq: Int64(index + 1))
        }
        return (world.chains, world.accounts)
    }

    @Test(arguments: [UInt64(3), 17, 42, 99])
    func replayingTheStoredLogGivesWhatIncrementalUpdatesGave(seed: UInt64) throws {
        let history = History.generate(seed: seed)
        var rng = SplitMix64(seed: seed)
        let world = History.play(history.arranged(using: &rng))
        let rebuilt = try replay(world.log)
        #expect(rebuilt.chains == world.chains)
        #expect(rebuilt.accounts == world.accounts)
        for now in history.instants {
            let replayed = CustomerView.build(
                userId: "u-1", account: rebuilt.accounts["u-1"]!, chains: rebuilt.chains, catalog: F.catalog,
                at: now, version: world.versions["u-1"]!)
            #expect(replayed == world.customer(at: now))
        }
    }

    @Test func asOfIsThePrefixOfTheLogJudgedAtThatInstant() throws {
        var world = World()
        try world.claim("1000", for: "u-1")
        let p1 = F.period("1000", start: F.t0)
        world.record(p1)
        let beforeRefund = world.log.count
        world.record(F.period("1000", start: F.t0, signed: F.t0 + 5 * F.day, revoked: F.t0 + 5 * F.day))
        let asOf = F.t0 + 4 * F.day
        let prefix = try replay(Array(world.log.prefix(beforeRefund)))
        let then = CustomerView.build(
            userId: "u-1", account: prefix.accounts["u-1"]!, chains: prefix.chains, catalog: F.catalog, at: asOf,
            version: 1)
        #expect(then.entitlements["pro"]?.active == true)
        #expect(!world.pro(at: asOf))
    }
}
