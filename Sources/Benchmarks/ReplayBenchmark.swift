import EventStore
import Foundation
import Infrastructure
import Ledger
import Replay
import Service
import TestSupport

/// For `make bench`: times a replay of a `ReplayBenchmarkLog` against a plain COPY of the whole log.
enum ReplayBenchmark {
    struct Result: Sendable, CustomStringConvertible {
        var events: Int
        var users: Int
        var replaySeconds: Double
        var copySeconds: Double
        /// CPU time (user + system) of this process during the replay: steadier than wall time
        /// on a shared machine.
        var replayCPUSeconds: Double = 0
        var eventsPerSecond: Double { replaySeconds > 0 ? Double(events) / replaySeconds : 0 }
        var ratioToCopy: Double { copySeconds > 0 ? replaySeconds / copySeconds : 0 }
        var phases: [(String, Int64)]

        var description: String {
            String(
                format:
                    "replay of %d events / %d users: %.2f s (%.0f events/s, %.2f s CPU); COPY (SELECT * FROM es.events) TO STDOUT: %.2f s; ratio %.2f×",
                events, users, replaySeconds, eventsPerSecond, replayCPUSeconds, copySeconds, ratioToCopy)
                + "; phases ms: " + phases.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        }
    }

    /// Runs one replay (swapping in unless `dryRun`) with the generated log's catalog.
    static func replay(conninfo: String, dryRun: Bool = false) throws -> ReplayReport {
        try ReplayEngine.judging(with: ReplayBenchmarkLog.catalog, conninfo: conninfo).run(
            ReplayOptions(dryRun: dryRun))
    }

    /// Times a replay and, on the same database in the same go, `COPY (SELECT * FROM es.events)
    /// TO STDOUT`. The replay first runs once untimed when `proj.users` is empty, so the timed one
    /// compares against a live projection as in production.
    static func measure(conninfo: String) throws -> Result {
        let connection = try Connection(conninfo)
        let users = Int(try connection.query("SELECT count(*) AS n FROM proj.users").int64(0, "n") ?? 0)
        if users == 0 {
            // The first replay announces a CORRECTION per user inside its swap, under the
            // writers' locks: its phases say how long the live tables were locked.
            let first = try replay(conninfo: conninfo)
            BenchmarkSuite.say(
                "replay into empty projections (untimed run): \(first.changedUsers.count) changed users; phases ms: "
                    + first.phases.map { "\($0.0) \($0.1)" }.joined(separator: ", "))
        }
        // Streamed and discarded, as `psql … > /dev/null` does. Gathered into one array (as it
        // was until 4 December), the baseline also timed growing a 400 MB buffer: 1.8 s in a
        // fresh process, 3–4 s in the next run of the same one, and the ratio flattered us.
        let copyStart = Date()
        var copied = 0
        try connection.copyOut("COPY (SELECT * FROM es.events) TO STDOUT") { copied += $0.count }
        let copySeconds = Date().timeIntervalSince(copyStart)
        precondition(copied > 0, "the COPY baseline read nothing")
        let cpuStart = processCPUSeconds()
        let replayStart = Date()
        let report = try replay(conninfo: conninfo)
        let replaySeconds = Date().timeIntervalSince(replayStart)
        return Result(
            events: report.events, users: report.users, replaySeconds: replaySeconds, copySeconds: copySeconds,
            replayCPUSeconds: processCPUSeconds() - cpuStart, phases: report.phases)
    }

    static func processCPUSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
            getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
