import EventStore
import Foundation

/// `iap-ledger-bench ingest --statements`: where PostgreSQL's share of a purchase goes. The
/// cluster loads pg_stat_statements (tracking the statements inside `es.append` too), the
/// counters are reset once the services are up, and after the runs each service's statements
/// are listed by their total execution time per purchase answered. Execution time is wall time
/// inside PostgreSQL (a COMMIT's includes its WAL flush), not CPU: it says which statements
/// weigh, the CPU per purchase of the runs says how much in all.
extension IngestBenchmark {
    static let statementSettings = [
        "shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all",
        "pg_stat_statements.track_utility": "on",
    ]

    static func resetStatements(cluster: BenchCluster, databases: [String]) throws {
        for database in databases {
            _ = try cluster.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", database: database)
        }
        // The counters are the cluster's; the function exists where the extension was created.
        if let database = databases.first {
            _ = try cluster.query("SELECT pg_stat_statements_reset()", database: database)
        }
    }

    /// Each database's statements by time per purchase, `purchases` being what it answered.
    static func printStatements(
        cluster: BenchCluster, databases: [(database: String, purchases: Int)], top: Int = 15
    ) throws {
        for (index, target) in databases.enumerated() {
            let purchases = Double(max(target.purchases, 1))
            let rows = try cluster.query(
                """
                SELECT s.calls, s.total_exec_time, s.rows, s.toplevel,
                       regexp_replace(s.query, '\\s+', ' ', 'g')
                FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
                WHERE d.datname = $1
                ORDER BY s.total_exec_time DESC LIMIT $2
                """, [target.database, String(top)], database: target.database)
            var total = 0.0
            for row in 0..<rows.count where rows[row, 3] == "t" { total += Double(rows[row, 1] ?? "") ?? 0 }
            print(
                String(
                    format: "[%d] PostgreSQL time per purchase by statement (pg_stat_statements, %d purchases):",
                    index + 1, target.purchases))
            for row in 0..<rows.count {
                let calls = Double(rows[row, 0] ?? "") ?? 0
                let milliseconds = Double(rows[row, 1] ?? "") ?? 0
                let text = String((rows[row, 4] ?? "").prefix(110))
                print(
                    String(
                        format: "  %7.1f µs/purchase %6.2f calls/purchase %8.1f µs/call %@ %@",
                        milliseconds * 1000 / purchases, calls / purchases, milliseconds * 1000 / max(calls, 1),
                        rows[row, 3] == "t" ? "top " : "nested", text))
            }
            print(String(format: "  top-level statements among these: %.1f µs/purchase", total * 1000 / purchases))
        }
    }
}
