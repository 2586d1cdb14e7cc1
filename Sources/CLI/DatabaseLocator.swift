import EventStore
import Foundation
import Infrastructure
import Service

/// How every command but `serve` finds the service's database: exactly as `serve` does
/// (`DATABASE_URL`, else the embedded cluster under `--data-dir`, default `./.iap-ledger`), saying
/// on stderr which one it uses. It never creates a cluster: `keys create` run from the wrong
/// directory used to create a fresh one beside the real one and print a key the running server
/// rejected, and `replay --dry-run` there reported 0 events while the real log had 13.
package enum DatabaseLocator {
    /// What was found, before anything is started.
    package enum Found: Equatable {
        /// `DATABASE_URL`.
        case url(String)
        /// The cluster a running `serve` started: shared, left running.
        case running(directory: String, conninfo: String)
        /// A cluster that exists but nobody runs: started for the command, stopped after.
        case stopped(directory: String)
        /// No cluster under the directory (and no `DATABASE_URL`).
        case nothing(directory: String)
    }

    /// The data directory when `--data-dir` is not given: the same as `serve`'s
    /// (`ServiceApp.Options.dataDirectory`).
    package static let defaultDataDirectory = "./.iap-ledger"

    package struct NotFound: Error, CustomStringConvertible {
        package var description: String
    }

    /// `path` made absolute against the working directory (it need not exist), so the line an
    /// operator reads says exactly where we looked.
    package static func absolutePath(_ path: String) -> String {
        let base = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return URL(fileURLWithPath: base).standardized.path
    }

    package static func find(dataDirectory: String?, databaseURL: String?) -> Found {
        if let databaseURL { return .url(databaseURL) }
        let directory = absolutePath(dataDirectory ?? defaultDataDirectory)
        if let conninfo = DataDirectoryLock.runningCluster(in: directory) {
            return .running(directory: directory, conninfo: conninfo)
        }
        // PG_VERSION is what initdb writes first and what EmbeddedPostgres checks to skip initdb.
        if FileManager.default.fileExists(atPath: directory + "/pgdata/PG_VERSION") {
            return .stopped(directory: directory)
        }
        return .nothing(directory: directory)
    }

    /// The one line that says where nothing was found and the three ways out.
    package static func notFound(_ directory: String) -> NotFound {
        NotFound(
            description:
                "no database: DATABASE_URL is not set and there is no embedded cluster in \(directory) (no pgdata there);"
                + " pass --data-dir with the directory `iap-ledger serve` uses, set DATABASE_URL,"
                + " or start `iap-ledger serve --data-dir \(directory)` first (it creates the cluster)")
    }

    /// Runs `body` with an admin conninfo and whether the cluster behind it was started only for
    /// this command (it stops when `body` returns). A missing cluster is never created here: only
    /// `serve` creates one (in ServiceApp), on its first start.
    package static func withDatabase<T>(
        dataDirectory: String?, _ body: (_ conninfo: String, _ temporary: Bool) throws -> T
    ) throws -> T {
        var found = find(
            dataDirectory: dataDirectory,
            databaseURL: ServiceSettings.databaseURL.text(environment: CommandLineInterface.processEnvironment))
        switch found {
        case .url(let url):
            let target = ConnectionTarget(conninfo: url).map { "\($0)" } ?? "(libpq cannot parse it)"
            say("using DATABASE_URL \(target)\(dataDirectory == nil ? "" : " (--data-dir is ignored, as serve does)")")
            return try body(url, false)
        case .running(let directory, let conninfo):
            say("using the embedded cluster in \(directory) (running, started by iap-ledger serve)")
            return try body(conninfo, false)
        case .stopped(let directory), .nothing(let directory):
            if case .nothing = found { throw notFound(directory) }
            let lock: DataDirectoryLock
            do {
                lock = try DataDirectoryLock.acquire(directory)
            } catch {
                // A serve took the directory between the look and the lock: use its cluster.
                found = find(dataDirectory: directory, databaseURL: nil)
                guard case .running(_, let conninfo) = found else {
                    guard error.description.contains("in use by another iap-ledger serve") else { throw error }
                    throw NotFound(
                        description:
                            "\(error.description), whose cluster does not answer yet (starting or stopping?): try again once serve listens"
                    )
                }
                say("using the embedded cluster in \(directory) (running, started by iap-ledger serve)")
                return try body(conninfo, false)
            }
            defer { lock.release() }
            say("using the embedded cluster in \(directory) (not running: started for this command, stopped after)")
            let cluster: EmbeddedPostgres
            do {
                cluster = try EmbeddedPostgres.start(dataDirectory: directory)
            } catch {
                throw ServiceApp.StartupError(description: "embedded PostgreSQL: \(error)")
            }
            cluster.stopWhenProcessExits()
            defer { cluster.stop() }
            return try body(cluster.connectionString(), true)
        }
    }

    /// The stderr line naming the database (stdout stays the command's answer alone).
    package static func say(_ line: String) {
        CommandLineInterface.printError("iap-ledger: \(line)")
    }
}
