import EventStore
import Foundation
import TestSupport

/// The private PostgreSQL of one `make bench` run: started through `EmbeddedPostgres` (the code
/// `serve` uses) in a fresh temp directory, with production durability (fsync and
/// synchronous_commit on, full_page_writes on: PostgreSQL's defaults). Two databases: `iap_ledger`
/// for the service and `pgbench` for the baselines, so both load the same cluster and disk.
final class BenchCluster {
    static let settings = ["max_connections": "200", "fsync": "on", "synchronous_commit": "on"]

    let directory: String
    let server: EmbeddedPostgres

    /// `extra`: server settings beyond the production ones (a profiling extension, say).
    init(settings extra: [String: String] = [:]) throws {
        directory = try TestDatabase.makeTemporaryDirectory()
        server = try EmbeddedPostgres.start(
            dataDirectory: directory, settings: Self.settings.merging(extra) { _, added in added })
        server.stopWhenProcessExits(removingDataDirectory: true)
        try server.createDatabase("pgbench")
    }

    var serviceConninfo: String { server.connectionString(database: "iap_ledger") }

    /// libpq flags for pgbench/psql: `-h SOCKETDIR -p 5432 -U postgres`.
    var clientFlags: [String] { ["-h", server.socketDirectory, "-p", "5432", "-U", "postgres"] }

    /// `pgbench -i -s 10` (100 MB, 1M accounts) plus the single-row INSERT target table.
    func initializePgbench(scale: Int) throws {
        try Shell.check(["pgbench", "-i", "-q", "-s", String(scale)] + clientFlags + ["pgbench"])
        let connection = try Connection(server.connectionString(database: "pgbench"))
        try connection.executeScript(
            "CREATE TABLE IF NOT EXISTS bench_insert (id bigint NOT NULL, created_at timestamptz NOT NULL, payload text NOT NULL)"
        )
    }

    func query(_ sql: String, _ params: [String?] = [], database: String = "iap_ledger") throws -> Rows {
        try Connection(server.connectionString(database: database)).query(sql, params)
    }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// `iap-ledger serve` as its own process against the bench cluster (`DATABASE_URL`), so the
/// service's CPU and RSS are its own and the load reaches it over TCP like a client's would.
final class ServiceProcess {
    let process = Process()
    let url: String
    let logPath: String
    var pid: Int32 { process.processIdentifier }

    init(binary: String, configPath: String, databaseURL: String, threads: Int, logPath: String) throws {
        self.logPath = logPath
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "serve", "--config", configPath, "--port", "0", "--host", "127.0.0.1", "--threads", String(threads),
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(["DATABASE_URL": databaseURL]) { _, new in new
        }
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var found: String?
        for _ in 0..<600 where found == nil {
            usleep(50_000)
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("iap-ledger listening on ") }) {
                found = String(line.dropFirst("iap-ledger listening on ".count))
            }
            if !process.isRunning { break }
        }
        guard let found else {
            process.terminate()
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw Shell.Failure(description: "iap-ledger serve did not start: \(text.suffix(800))")
        }
        url = found
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()  // SIGTERM: graceful stop
        process.waitUntilExit()
    }
}
