import EventStore
import Foundation
import Schema
import Synchronization
import SystemCalls

/// One private PostgreSQL cluster per test process, started through `EmbeddedPostgres` (the same
/// code path as `iap-ledger serve`) in a fresh temporary directory on first use, and stopped and
/// deleted when the process exits. Thread-safe: test suites of every target run in parallel in
/// one process and share the cluster, each with its own databases.
///
/// ```swift
/// let conninfo = try TestDatabase.shared.freshDatabase()        // all migrations applied
/// let connection = try Connection(conninfo)                    // superuser (admin) connection
/// try connection.executeScript("SET ROLE iap_ledger_service")  // act as the service
/// ```
public final class TestDatabase: Sendable {
    public static let shared = TestDatabase()

    private struct State {
        var server: EmbeddedPostgres?
        var directory: String?
        var startFailure: String?
        var templateReady = false
        var counter = 0
    }

    private let state = Mutex(State())
    private static let template = "iap_test_template"

    /// Test-only server settings: durability is pointless for throwaway data and costs time
    /// on a shared disk. (`serve` keeps the defaults, synchronous_commit on.) Many test services
    /// run at once, each with up to 8 pooled connections (its handler pool and its inline reads
    /// can use them all) beside its background jobs' own: a whole debug suite peaked at 497
    /// client connections (sampled every 0.5 s, 2026-12-07), and two suites on one box (tests
    /// run longer, more of them overlap) went past 600. 1000 leaves room.
    public static let settings = ["fsync": "off", "full_page_writes": "off", "max_connections": "1000"]

    /// The repository's `migrations/` directory: the source of `SchemaMigrations.all`, read only
    /// by the test that keeps the two equal.
    public static let migrationsDirectory: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("migrations").path

    /// The `.sql` files of `directory` (default: the repository's `migrations/`) as migrations,
    /// sorted by name, each file's bytes as they are.
    public static func migrationFiles(in directory: String = migrationsDirectory) throws -> [Migration] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }.sorted()
            .map { name in
                let bytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
                return Migration(
                    version: Int(name.prefix(4)) ?? -1, name: name, sql: String(decoding: bytes, as: UTF8.self))
            }
    }

    /// The shared cluster, started on first use.
    public func server() throws -> EmbeddedPostgres {
        try state.withLock { state throws -> EmbeddedPostgres in try Self.started(&state) }
    }

    /// The conninfo of a brand-new database (as the cluster superuser), with every migration
    /// (`SchemaMigrations.all`) applied unless `migrated` is false.
    public func freshDatabase(migrated: Bool = true) throws -> String {
        let (server, name) = try state.withLock { state throws -> (EmbeddedPostgres, String) in
            let server = try Self.started(&state)
            if migrated && !state.templateReady {
                // Migrate once into a template, then copy it: faster than migrating every database,
                // and it keeps concurrent tests from creating the cluster-wide role at the same time.
                try server.createDatabase(Self.template)
                let connection = try Connection(server.connectionString(database: Self.template))
                try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all)
                state.templateReady = true
            }
            state.counter += 1
            return (server, "test_\(getpid())_\(state.counter)")
        }
        try server.createDatabase(name, template: migrated ? Self.template : "template0")
        return server.connectionString(database: name)
    }

    /// Stops the cluster and deletes its directory (runs at process exit).
    public func stop() {
        let (server, directory) = state.withLock { state in
            defer {
                state.server = nil
                state.directory = nil
            }
            return (state.server, state.directory)
        }
        server?.stop()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    private static func started(_ state: inout State) throws -> EmbeddedPostgres {
        if let server = state.server { return server }
        if let failure = state.startFailure { throw TestDatabaseError(message: failure) }
        do {
            let directory = try makeTemporaryDirectory()
            state.directory = directory
            atexit { TestDatabase.shared.stop() }
            let server = try EmbeddedPostgres.start(dataDirectory: directory, settings: settings)
            // atexit does not run when a test crashes the process: the watchdog covers that.
            server.stopWhenProcessExits(removingDataDirectory: true)
            state.server = server
            return server
        } catch {
            state.startFailure = "\(error)"
            throw error
        }
    }

    /// A new private directory under /tmp (short, so the socket path stays under 107 bytes).
    public static func makeTemporaryDirectory() throws -> String {
        var template = Array("/tmp/iap-ledger-test-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw TestDatabaseError(message: "mkdtemp failed: \(SystemCallError.last)")
        }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

/// Setting up the test cluster failed.
public struct TestDatabaseError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
