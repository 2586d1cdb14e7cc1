import EventStore
import Foundation
import Infrastructure
import Service
import TestSupport

/// For `make bench` (`--only logmigration`): how long `iap-ledger migrate`'s one-time log
/// migration holds the tables (docs/operations.md tells operators to time it first), on a log
/// written as before subjects (`ReplayBenchmarkLog` seeds users by id, in clear), next to what
/// PostgreSQL alone takes to rewrite every row of the same log once, in the same go.
extension BenchmarkSuite {
    mutating func logMigrationBenchmark(cluster: BenchCluster) throws {
        let events = 200_000
        let users = 20_000
        let binary = Self.binaryDirectory + "/iap-ledger"
        var ours: [Double] = []
        var baselines: [Double] = []
        for run in 1...parameters.runs {
            // A fresh log each run: the migration runs once per database.
            let database = "logmigration\(run)"
            try cluster.server.createDatabase(database)
            let conninfo = cluster.server.connectionString(database: database)
            try ServiceApp.migrate(conninfo: conninfo, logger: .silent)
            Self.say("log migration run \(run): seeding \(events) events for \(users) users")
            try ReplayBenchmarkLog.seed(events: events, users: users, conninfo: conninfo)
            let connection = try Connection(conninfo)
            // Born empty, the database recorded that it had nothing to migrate: it has now.
            _ = try connection.execute("DELETE FROM identity.log_sealing")

            // The baseline: every row of the log rewritten once by PostgreSQL alone (a copy
            // of es.events, whose own rows refuse UPDATE), then VACUUM FULL as the migration does.
            _ = try connection.execute("CREATE TABLE public.log_copy AS SELECT * FROM es.events")
            let baselineStart = Date()
            _ = try connection.execute("UPDATE public.log_copy SET data = data || '{}'::jsonb")
            try connection.executeScript("VACUUM FULL public.log_copy")
            let baseline = Date().timeIntervalSince(baselineStart)
            _ = try connection.execute("DROP TABLE public.log_copy")

            let start = Date()
            let output = try Shell.check([binary, "migrate"], environment: ["DATABASE_URL": conninfo])
            let seconds = Date().timeIntervalSince(start)
            guard output.contains("sealed the log: ") else {
                throw Shell.Failure(description: "migrate sealed nothing: \(output)")
            }
            Self.say(
                "log migration run \(run): \(String(format: "%.2f", seconds)) s (\(output.split(separator: "\n").last ?? "")); "
                    + "UPDATE of every row + VACUUM FULL: \(String(format: "%.2f", baseline)) s")
            ours.append(seconds)
            baselines.append(baseline)
        }
        let seconds = ours.median!
        let baseline = baselines.median!
        rows.append(
            BenchmarkRow(
                name:
                    "Log migration of \(BenchmarkReport.number(Double(events))) events from before subjects (\(users / 1000)k users)",
                figure:
                    "\(BenchmarkReport.number(Double(events) / seconds)) events/s (\(String(format: "%.1f", seconds)) s the tables are held)",
                runs: ours.map { Double(events) / $0 },
                baseline: "UPDATE of every row of a copy + VACUUM FULL: \(String(format: "%.1f", baseline)) s",
                baselineRuns: baselines, ratio: String(format: "%.2f× its time", seconds / baseline),
                aim: "none yet: tells an operator how long instances wait (docs/operations.md)", met: nil,
                command: "DATABASE_URL=… iap-ledger migrate (on a log seeded as before migration 0047)",
                baselineCommand:
                    "UPDATE log_copy SET data = data || '{}'::jsonb; VACUUM FULL log_copy (log_copy: CREATE TABLE AS SELECT * FROM es.events)"
            ))
    }
}
