import EventStore
import Foundation
import Testing
import TestSupport
@testable import Service

@Suite struct ReplayBenchmarkTests {
    @Test func seededLogReplaysIntoConsistentDocuments() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        try ReplayBenchmark.seed(events: 20_000, users: 2_000, conninfo: conninfo)
        let connection = try Connection(conninfo)
        #expect(try connection.query("SELECT count(*) AS n FROM es.events").int64(0, "n") == 20_000)
        let first = try ReplayBenchmark.replay(conninfo: conninfo)
        #expect(first.events == 20_000)
        #expect(first.users == 2_000)
        #expect(first.changedUsers.count == 2_000)  // the live projection was empty
        let document = try connection.query("SELECT document FROM proj.users WHERE user_id = 'bench-7'")[0, 0]!
        #expect(document.contains("\"pro\""))
        #expect(document.contains("\"coins\":"))
        let again = try ReplayBenchmark.replay(conninfo: conninfo, dryRun: true)
        #expect(again.changedUsers.isEmpty)
        let result = try ReplayBenchmark.measure(conninfo: conninfo)
        #expect(result.events == 20_000 && result.eventsPerSecond > 0)
    }

    /// `IAP_REPLAY_BENCH_EVENTS=1000000 IAP_REPLAY_BENCH_USERS=100000 swift test -c release --filter ReplayBenchmarkTests`
    @Test(.enabled(if: ProcessInfo.processInfo.environment["IAP_REPLAY_BENCH_EVENTS"] != nil))
    func benchmark() throws {
        let environment = ProcessInfo.processInfo.environment
        let events = Int(environment["IAP_REPLAY_BENCH_EVENTS"] ?? "") ?? 1_000_000
        let users = Int(environment["IAP_REPLAY_BENCH_USERS"] ?? "") ?? 100_000
        let conninfo = try TestDatabase.shared.freshDatabase()
        let seedStart = Date()
        try ReplayBenchmark.seed(events: events, users: users, conninfo: conninfo)
        print("seeded \(events) events in \(String(format: "%.1f", Date().timeIntervalSince(seedStart))) s")
        let result = try ReplayBenchmark.measure(conninfo: conninfo)
        print(result)
        #expect(result.events == events)
    }
}
