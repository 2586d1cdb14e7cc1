import EventStore
import Foundation
import HTTP
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Every periodic background job runs on `JobRunner` (issue 37, item 3): rounds spaced by the
/// interval, a failure logged once per run of failures and counted, and `stopAll` stopping the
/// jobs in the reverse order of their start, each after the round in hand.
@Suite(.tags(.database)) struct JobRunnerTests {
    /// What the jobs of a test did, in order.
    final class Journal: Sendable {
        let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        func count(_ entry: String) -> Int { entries.withLock { $0.filter { $0 == entry }.count } }
        var all: [String] { entries.withLock { $0 } }
    }

    struct Refused: Error, CustomStringConvertible { var description: String { "refused by JobRunnerTests" } }

    /// A job whose rounds write to `journal`: short ones, failing ones, or one long round that
    /// lasts until it is asked to stop (and says so).
    func job(_ name: String, on conninfo: String, journal: Journal, failing: Bool = false, long: Bool = false)
        -> BackgroundJob
    {
        BackgroundJob(
            name: name, interval: 0.01, connections: .dedicated(conninfo: conninfo, session: SessionSettings())
        ) { connection, round in
            // A real round trip per round: the job's connection works.
            #expect(try connection.query("SELECT 1")[0, 0] == "1")
            journal.add(name)
            if failing { throw Refused() }
            guard long else { return }
            // Work between its checks, as a long round does: a round trip per item until told to stop.
            while !round.shouldStop() { _ = try connection.query("SELECT 1") }
            journal.add("\(name) stopped")
        }
    }

    @Test func roundsRunUntilStoppedAndJobsStopInReverseOrder() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let registry = MetricsRegistry()
        let log = LogCapture()
        let runner = JobRunner(logger: log.logger, registry: registry)
        let journal = Journal()
        runner.start(job("first", on: conninfo, journal: journal))
        runner.start(job("second", on: conninfo, journal: journal))
        runner.start(job("broken", on: conninfo, journal: journal, failing: true))
        try eventually("five rounds of each job", within: 30) {
            journal.count("first") >= 5 && journal.count("second") >= 5 && journal.count("broken") >= 5
        }

        runner.stopAll()
        let after = journal.all
        let text = String(decoding: registry.render(), as: UTF8.self)
        func rounds(_ job: String, _ outcome: String) -> Double {
            let prefix = "iap_job_rounds_total{job=\"\(job)\",outcome=\"\(outcome)\"} "
            return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap {
                Double($0.dropFirst(prefix.count))
            } ?? 0
        }
        #expect(rounds("first", "ok") >= 5 && rounds("second", "ok") >= 5, "\(text)")
        #expect(rounds("broken", "failed") == Double(journal.count("broken")))
        #expect(rounds("broken", "ok") == 0)
        // A run of failures is logged once, not every round.
        let warnings = log.text.split(separator: "\n").filter { $0.contains("refused by JobRunnerTests") }
        #expect(warnings.count == 1, "\(log.text)")
        #expect(text.contains("iap_job_seconds_since_success{job=\"broken\"}"))
        #expect(journal.all == after, "a stopped job ran again")
    }

    @Test func stopAllStopsTheLastStartedFirstAfterItsRoundInHand() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let runner = JobRunner(logger: .silent)
        let journal = Journal()
        for name in ["one", "two", "three"] { runner.start(job(name, on: conninfo, journal: journal, long: true)) }
        try eventually("a round of each job begun", within: 30) { Set(journal.all) == ["one", "two", "three"] }
        runner.stopAll()
        #expect(journal.all.filter { $0.hasSuffix(" stopped") } == ["three stopped", "two stopped", "one stopped"])
        let after = journal.all
        runner.stopAll()  // again: nothing left to stop, returns at once
        #expect(journal.all == after)
    }
}
