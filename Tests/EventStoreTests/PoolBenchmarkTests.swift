import EventStore
import Foundation
import TestSupport
import Testing

/// Opt-in measurements (`IAP_LEDGER_BENCH=1 swift test -c release --filter PoolBenchmarkTests`);
/// they print numbers and assert nothing about speed.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["IAP_LEDGER_BENCH"] != nil), .serialized)
struct PoolBenchmarkTests {
    private func measure(_ label: String, operations: Int, _ body: () -> Void) {
        let start = ContinuousClock.now
        body()
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(
            "BENCH \(label): \(Int(Double(operations) / seconds)) ops/s (\(operations) in \(String(format: "%.2f", seconds)) s)"
        )
    }

    @Test func selectThroughPoolVersusOwnConnections() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let threads = 8
        let perThread = 4000
        let connections = try (0..<threads).map { _ in try Connection(conninfo) }
        measure("own connection per thread, 8 threads", operations: threads * perThread) {
            onThreads(threads) { index in
                for i in 0..<perThread { _ = try? connections[index].query("SELECT $1::int4 AS v", [String(i)]) }
            }
        }
        for size in [8, 2] {
            let pool = ConnectionPool(conninfo: conninfo, size: size)
            try pool.withConnection { _ in }
            measure("pool of \(size), 8 threads", operations: threads * perThread) {
                onThreads(threads) { _ in
                    for i in 0..<perThread {
                        _ = try? pool.withConnection { try $0.query("SELECT $1::int4 AS v", [String(i)]) }
                    }
                }
            }
            print("BENCH pool of \(size) stats: \(pool.stats)")
        }
    }

    @Test func appendsPerSecond() throws {
        // Its own cluster with the production settings (fsync on, synchronous_commit on).
        let directory = try TestDatabase.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try EmbeddedPostgres.start(dataDirectory: directory)
        server.stopWhenProcessExits()
        defer { server.stop() }
        let conninfo = server.connectionString()
        try Migrator.migrate(connection: try Connection(conninfo), directory: TestDatabase.migrationsDirectory)
        let store = EventStore()
        for (threads, streams) in [(1, 1000), (16, 100_000), (16, 10)] {
            let perThread = threads == 1 ? 2000 : 300
            measure("append 1 event, \(threads) writers, \(streams) streams", operations: threads * perThread) {
                onThreads(threads) { writer in
                    guard let connection = try? Connection(conninfo) else { return }
                    for i in 0..<perThread {
                        let stream = "user:\((writer * 7919 + i * 104_729) % streams)"
                        _ = try? connection.transaction { connection in
                            try store.append(
                                to: stream, expectedVersion: .any,
                                events: [NewEvent(type: "Granted", data: Array(#"{"product":"pro"}"#.utf8))],
                                on: connection)
                        }
                    }
                }
            }
        }
        let connection = try Connection(conninfo)
        measure(
            "readAll 1000-row pages",
            operations: try connection.query("SELECT count(*) AS n FROM es.events").int64(0, "n").map { Int($0) } ?? 0
        ) {
            var checkpoint = Checkpoint.start
            while let page = try? store.readAll(after: checkpoint, limit: 1000, on: connection), let last = page.last {
                checkpoint = last.checkpoint
            }
        }
    }
}
