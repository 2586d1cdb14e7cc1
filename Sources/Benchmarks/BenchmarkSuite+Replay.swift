import EventStore
import Foundation
import Infrastructure
import Ledger
import Service
import TestSupport

/// The replay group of `make bench`: the replay against COPY, then the analytics projector over
/// the same log.
extension BenchmarkSuite {
    /// Replay of a generated log (1M events, 100k users) next to a plain COPY read of the same
    /// log, on the same database in the same go.
    mutating func replayBenchmark(cluster: BenchCluster) throws {
        let events = 1_000_000
        let users = 100_000
        try cluster.server.createDatabase("replay")
        let conninfo = cluster.server.connectionString(database: "replay")
        try ServiceApp.migrate(conninfo: conninfo, logger: .silent)
        Self.say("replay: seeding \(events) events for \(users) users")
        try ReplayBenchmarkLog.seed(events: events, users: users, conninfo: conninfo)
        var results: [ReplayBenchmark.Result] = []
        for run in 1...parameters.runs {
            let result = try ReplayBenchmark.measure(conninfo: conninfo)
            Self.say("replay run \(run): \(result)")
            results.append(result)
        }
        let rates = results.map(\.eventsPerSecond)
        let copies = results.map(\.copySeconds)
        let ratios = results.map(\.ratioToCopy)
        let rate = rates.median!
        let ratio = ratios.median!
        rows.append(
            BenchmarkRow(
                name: "Replay of 1,000,000 events (100k users)",
                figure:
                    "\(BenchmarkReport.number(rate)) events/s (\(String(format: "%.1f", results.map(\.replaySeconds).median!)) s)",
                runs: rates,
                baseline: "COPY (SELECT * FROM es.events) TO STDOUT: \(String(format: "%.1f", copies.median!)) s",
                baselineRuns: copies, ratio: String(format: "%.2f× COPY time", ratio),
                aim: "≥ 300k events/s, ≤ 1.2× COPY time (#17)", met: rate >= 300_000 && ratio <= 1.2,
                command:
                    "DATABASE_URL='postgresql:///replay?host=$PGHOST&user=postgres' iap-ledger replay (a full replay with swap; the bench times the same engine through ReplayBenchmark.measure)",
                baselineCommand:
                    "psql -h $PGHOST -U postgres replay -c 'COPY (SELECT * FROM es.events) TO STDOUT' > /dev/null"))
        try analyticsCatchUpBenchmark(conninfo: conninfo, copySeconds: copies.median!)
    }

    /// The analytics projector over the replay's log, once per go, next to the replay's COPY of it.
    mutating func analyticsCatchUpBenchmark(conninfo: String, copySeconds: Double) throws {
        let result = try AnalyticsCatchUpBenchmark.measure(conninfo: conninfo)
        Self.say(result.description)
        rows.append(
            BenchmarkRow(
                name: "Analytics catch-up of the same log, rounds of 1,000 events (once per go)",
                figure:
                    "\(BenchmarkReport.number(result.eventsPerSecond)) events/s (\(String(format: "%.1f", result.seconds)) s), \(String(format: "%.1f", result.cpuMicrosecondsPerEvent)) µs of PostgreSQL CPU per event",
                runs: [result.eventsPerSecond],
                baseline: "COPY (SELECT * FROM es.events) TO STDOUT: \(String(format: "%.1f", copySeconds)) s",
                baselineRuns: [copySeconds], ratio: String(format: "%.2f× COPY time", result.seconds / copySeconds),
                aim: "≤ 20 µs CPU per event: a round costs its batch, not the log (#39)",
                met: result.cpuMicrosecondsPerEvent <= 20,
                command:
                    "psql -h $PGHOST -U postgres replay -c 'SELECT analytics.catch_up(1000)' (repeated until it answers 0, from empty analytics tables)",
                baselineCommand:
                    "psql -h $PGHOST -U postgres replay -c 'COPY (SELECT * FROM es.events) TO STDOUT' > /dev/null"))
    }
}
