import EventStore
import Foundation
import Schema
import TestSupport

/// `iap-ledger-bench pool`: the connection pool and the append path measured on their own, on a
/// private cluster with production durability (fsync on, synchronous_commit on). Not part of
/// `run`: a figure for tuning the pool size, with no baseline to stand next to. (These were an
/// opt-in test suite that asserted nothing; they are measurements, so they live here.)
enum PoolRuns {
    static func run() throws {
        BenchmarkSuite.say("starting PostgreSQL (fsync on, synchronous_commit on)")
        let cluster = try BenchCluster()
        defer { cluster.stop() }
        let conninfo = cluster.serviceConninfo
        try Migrator.migrate(connection: try Connection(conninfo), migrations: SchemaMigrations.all)
        try selectThroughPoolVersusOwnConnections(conninfo: conninfo)
        try appendsPerSecond(conninfo: conninfo)
    }

    static func selectThroughPoolVersusOwnConnections(conninfo: String) throws {
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
            print("pool of \(size) stats: \(pool.stats)")
        }
    }

    static func appendsPerSecond(conninfo: String) throws {
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
        let logged = try connection.query("SELECT count(*) AS n FROM es.events").int64(0, "n").map { Int($0) } ?? 0
        measure("readAll 1000-row pages", operations: logged) {
            var checkpoint = Checkpoint.start
            while let page = try? store.readAll(after: checkpoint, limit: 1000, on: connection), let last = page.last {
                checkpoint = last.checkpoint
            }
        }
    }

    private static func measure(_ label: String, operations: Int, _ body: () -> Void) {
        let start = ContinuousClock.now
        body()
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(
            "\(label): \(Int(Double(operations) / seconds)) ops/s (\(operations) in \(String(format: "%.2f", seconds)) s)"
        )
    }
}
