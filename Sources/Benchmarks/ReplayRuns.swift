import EventStore
import Foundation
import Infrastructure
import Service
import TestSupport

/// `iap-ledger-bench replay`: only the replay benchmark of `make bench`, seeded once, so a change
/// to the replay can be timed in a minute instead of a full run. On its own private cluster, or on
/// an existing database (`--database-url`, seeded only while its log is empty) so that two builds
/// can be timed against the same data one after the other.
enum ReplayRuns {
    static func run(events: Int, users: Int, runs: Int, databaseURL: String?, analytics: Bool = false) throws {
        var cluster: BenchCluster?
        defer { cluster?.stop() }
        let conninfo: String
        if let databaseURL {
            conninfo = databaseURL
        } else {
            BenchmarkSuite.say("starting PostgreSQL (fsync on, synchronous_commit on)")
            let started = try BenchCluster()
            cluster = started
            try started.server.createDatabase("replay")
            conninfo = started.server.connectionString(database: "replay")
        }
        try ServiceApp.migrate(conninfo: conninfo, logger: .silent)
        let logged = try Connection(conninfo).query("SELECT count(*) AS n FROM es.events").int64(0, "n") ?? 0
        if logged == 0 {
            BenchmarkSuite.say("replay: seeding \(events) events for \(users) users")
            let seedStart = Date()
            try ReplayBenchmarkLog.seed(events: events, users: users, conninfo: conninfo)
            BenchmarkSuite.say(String(format: "replay: seeded in %.1f s", Date().timeIntervalSince(seedStart)))
        } else {
            BenchmarkSuite.say("replay: the log already holds \(logged) events; not seeding")
        }
        var results: [ReplayBenchmark.Result] = []
        for run in 1...max(1, runs) {
            let result = try ReplayBenchmark.measure(conninfo: conninfo)
            print("replay run \(run): \(result)")
            results.append(result)
        }
        print(
            String(
                format: "replay median: %.2f s (%.0f events/s); COPY median %.2f s; ratio median %.2f×",
                results.map(\.replaySeconds).median!, results.map(\.eventsPerSecond).median!,
                results.map(\.copySeconds).median!, results.map(\.ratioToCopy).median!))
        // Opt-in: ~15–40 s that a comparison of two replay builds does not need.
        if analytics { print(try AnalyticsCatchUpBenchmark.measure(conninfo: conninfo)) }
    }
}
