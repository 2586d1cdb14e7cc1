import EventStore
import Foundation
import Infrastructure

/// For `make bench` (the replay group, on the replay's log): the analytics projector catching up
/// on the whole log from empty tables, in rounds of `batch` events as the live projector takes
/// them while ingest runs. Until `0052` every round's statements read all of the log's
/// transactions (a generic plan's index choice), so a round's cost followed the log's size, not
/// its batch: 106 µs of CPU per event on a 300,000-event log, against 16 µs now.
enum AnalyticsCatchUpBenchmark {
    struct Result: Sendable, CustomStringConvertible {
        var events: Int
        var rounds: Int
        var seconds: Double
        /// CPU of the PostgreSQL backend that ran the rounds (all of the work is there).
        var backendCPUSeconds: Double
        var eventsPerSecond: Double { seconds > 0 ? Double(events) / seconds : 0 }
        var cpuMicrosecondsPerEvent: Double { backendCPUSeconds * 1e6 / Double(max(events, 1)) }

        var description: String {
            String(
                format:
                    "analytics catch-up of %d events in %d rounds: %.2f s (%.0f events/s), the backend's CPU %.2f s = %.1f µs per event",
                events, rounds, seconds, eventsPerSecond, backendCPUSeconds, cpuMicrosecondsPerEvent)
        }
    }

    static func measure(conninfo: String, batch: Int = 1_000) throws -> Result {
        let connection = try Connection(conninfo)
        try connection.executeScript("BEGIN;\n" + AnalyticsProjector.emptying + "\nCOMMIT;")
        let backend = Int32(try connection.query("SELECT pg_backend_pid() AS p").int64(0, "p") ?? 0)
        let cpuStart = IngestBenchmark.cpuSeconds(of: [backend])
        let start = Date()
        var events = 0
        var rounds = 0
        while case let applied = try AnalyticsProjector.step(limit: batch, on: connection), applied > 0 {
            events += applied
            rounds += 1
        }
        return Result(
            events: events, rounds: rounds, seconds: Date().timeIntervalSince(start),
            backendCPUSeconds: IngestBenchmark.cpuSeconds(of: [backend]) - cpuStart)
    }
}
