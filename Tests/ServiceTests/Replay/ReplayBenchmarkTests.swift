import EventStore
import Foundation
import TestSupport
import Testing

@testable import Infrastructure
@testable import Replay
@testable import Service

/// The bench tool's generated log (`ReplayBenchmarkLog`) is a log the replay judges as it would
/// a real one; the timing itself is `iap-ledger-bench replay`.
@Suite(.tags(.database, .slow)) struct ReplayBenchmarkTests {
    @Test func seededLogReplaysIntoConsistentDocuments() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        try ReplayBenchmarkLog.seed(events: 20_000, users: 2_000, conninfo: conninfo)
        let connection = try Connection(conninfo)
        #expect(try connection.query("SELECT count(*) AS n FROM es.events").int64(0, "n") == 20_000)
        let engine = ReplayEngine.judging(with: ReplayBenchmarkLog.catalog, conninfo: conninfo)
        let first = try engine.run(ReplayOptions())
        #expect(first.events == 20_000)
        #expect(first.users == 2_000)
        #expect(first.changedUsers.count == 2_000)  // the live projection was empty
        let document = try connection.query("SELECT document FROM proj.users WHERE user_id = 'bench-7'")[0, 0]!
        #expect(document.contains("\"pro\""))
        #expect(document.contains("\"coins\":"))
        let again = try engine.run(ReplayOptions(dryRun: true))
        #expect(again.changedUsers.isEmpty)
        // A second real run swaps in the same documents: what the bench times after its first go.
        let timed = try engine.run(ReplayOptions())
        #expect(timed.events == 20_000 && timed.changedUsers.isEmpty)
    }
}
