import EventStore
import Foundation
import Synchronization

/// A real physical streaming replica (hot standby) of an `EmbeddedPostgres` cluster, for tests:
/// `pg_basebackup -R -C -S <slot> -X stream` into a private directory, started like any embedded
/// cluster (its own socket directory, so it never clashes with the primary), and returned once
/// it is in recovery and its WAL receiver streams. `stop()` (or deinit) stops it, drops its
/// replication slot on the primary (so the primary does not keep WAL for it) and deletes it.
///
/// ```swift
/// let primary = try StreamingReplica.startPrimary()
/// let replica = try StreamingReplica.start(of: primary)
/// try replica.waitUntilReplayed()          // everything the primary has flushed is visible
/// ```
public final class StreamingReplica: Sendable {
    public let primary: EmbeddedPostgres
    /// The standby itself (read-only; `connectionString` reaches it as the superuser).
    public let server: EmbeddedPostgres
    public let slot: String
    private let directory: String
    private let stopped = Mutex(false)
    private static let counter = Atomic<Int>(0)

    /// Settings a primary needs to serve physical replicas (PostgreSQL 15's defaults, spelled
    /// out so a test cluster never depends on them).
    public static let primarySettings = ["wal_level": "replica", "max_wal_senders": "10"]

    /// A private primary for replica tests, in a fresh temporary directory (deleted when the
    /// process exits), with `TestDatabase.settings` and `primarySettings`. Kept apart from the
    /// shared test cluster so a base backup copies one small cluster, not every suite's databases.
    public static func startPrimary() throws -> EmbeddedPostgres {
        let directory = try TestDatabase.makeTemporaryDirectory()
        let server = try EmbeddedPostgres.start(
            dataDirectory: directory, settings: TestDatabase.settings.merging(primarySettings) { _, new in new })
        server.stopWhenProcessExits(removingDataDirectory: true)
        return server
    }

    /// Takes a base backup of `primary` and starts it as a streaming standby; waits (at most
    /// `timeout` seconds) until it is in recovery and streaming. `settings` must not be below the
    /// primary's for `max_connections` and friends (a hot standby refuses to start otherwise).
    public static func start(
        of primary: EmbeddedPostgres, settings: [String: String] = TestDatabase.settings, timeout: Double = 60
    ) throws -> StreamingReplica {
        let slot = "iap_replica_\(getpid())_\(counter.add(1, ordering: .relaxed).newValue)"
        try allowReplication(on: primary)
        let directory = try TestDatabase.makeTemporaryDirectory()
        try giveToPostgres(directory)
        guard let basebackup = EmbeddedPostgres.clientProgram("pg_basebackup") else {
            throw TestDatabaseError(message: "pg_basebackup not found: install the `postgresql` package")
        }
        let backup = try runAsPostgres([
            basebackup, "-h", primary.socketDirectory, "-p", "5432", "-U", "postgres", "-D", directory + "/pgdata",
            "-R", "-C", "-S", slot, "-X", "stream", "--checkpoint=fast", "--no-sync",
        ])
        guard backup.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw TestDatabaseError(message: "pg_basebackup failed (\(backup.status)): \(backup.output)")
        }
        let server: EmbeddedPostgres
        do {
            server = try EmbeddedPostgres.start(dataDirectory: directory, settings: settings)
        } catch {
            dropSlot(slot, on: primary)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        server.stopWhenProcessExits(removingDataDirectory: true)
        let replica = StreamingReplica(primary: primary, server: server, slot: slot, directory: directory)
        try replica.waitUntilStreaming(timeout: timeout)
        return replica
    }

    private init(primary: EmbeddedPostgres, server: EmbeddedPostgres, slot: String, directory: String) {
        self.primary = primary
        self.server = server
        self.slot = slot
        self.directory = directory
    }

    deinit { stop() }

    /// The standby's libpq conninfo for `database` (superuser, over its own socket).
    public func connectionString(database: String = "iap_ledger") -> String {
        server.connectionString(database: database)
    }

    /// Waits until the standby has replayed everything the primary had flushed when this was
    /// called (every commit acknowledged by then is visible on the standby).
    /// (WAL is the whole cluster's: one position covers every database.)
    public func waitUntilReplayed(timeout: Double = 30) throws {
        let flushed = try Connection(primary.connectionString(database: "postgres"))
            .query("SELECT pg_current_wal_flush_lsn()::text")[0, 0]
        let standby = try Connection(connectionString(database: "postgres"))
        try eventually("the replica to replay \(flushed ?? "?")", within: timeout) {
            try standby.query("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", [flushed])[0, 0] == "t"
        }
    }

    /// Pauses replay on the standby (`pg_wal_replay_pause()`) and waits until it is paused: from
    /// then on it shows nothing the primary commits until `resumeReplay()`.
    public func pauseReplay() throws {
        let standby = try Connection(connectionString())
        _ = try standby.query("SELECT pg_wal_replay_pause()")
        try eventually("replay to pause", within: 30) {
            try standby.query("SELECT pg_get_wal_replay_pause_state()")[0, 0] == "paused"
        }
    }

    public func resumeReplay() throws {
        _ = try Connection(connectionString()).query("SELECT pg_wal_replay_resume()")
    }

    /// Stops the standby, drops its slot and deletes its directory; safe to call more than once.
    public func stop() {
        let already = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !already else { return }
        server.stop()
        Self.dropSlot(slot, on: primary)
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func waitUntilStreaming(timeout: Double) throws {
        let standby = try Connection(connectionString(database: "postgres"))
        try eventually("the replica to stream from the primary", within: timeout) {
            let rows = try standby.query(
                "SELECT pg_is_in_recovery(), (SELECT status FROM pg_stat_wal_receiver)")
            return rows[0, 0] == "t" && rows[0, 1] == "streaming"
        }
    }

    /// Makes sure `primary` accepts replication connections over its socket: WAL level, WAL
    /// senders, and a `replication` line in pg_hba.conf (initdb's `-A trust` writes one; a cluster
    /// whose file lacks it gets one for the local socket, reloaded).
    static func allowReplication(on primary: EmbeddedPostgres) throws {
        let connection = try Connection(primary.connectionString(database: "postgres"))
        let settings = try connection.query(
            "SELECT current_setting('wal_level'), current_setting('max_wal_senders')::int")
        guard settings[0, 0] != "minimal", (settings[0, 1].flatMap { Int($0) } ?? 0) > 0 else {
            throw TestDatabaseError(
                message:
                    "the primary cannot serve replicas (wal_level \(settings[0, 0] ?? "?"), max_wal_senders \(settings[0, 1] ?? "?")): start it with StreamingReplica.primarySettings"
            )
        }
        let rules = try connection.query(
            "SELECT count(*) FROM pg_hba_file_rules WHERE type = 'local' AND 'replication' = ANY(database) AND error IS NULL"
        )
        guard rules[0, 0] == "0" else { return }
        guard let hbaFile = try connection.query("SHOW hba_file")[0, 0],
            let handle = FileHandle(forWritingAtPath: hbaFile)
        else { throw TestDatabaseError(message: "cannot open the primary's pg_hba.conf") }
        handle.seekToEndOfFile()
        handle.write(Data("\nlocal replication all trust\n".utf8))
        handle.closeFile()
        _ = try connection.query("SELECT pg_reload_conf()")
    }

    static func dropSlot(_ slot: String, on primary: EmbeddedPostgres) {
        guard let connection = try? Connection(primary.connectionString(database: "postgres")) else { return }
        // The walsender of a just-stopped standby takes a moment to exit and release the slot.
        try? eventually("slot \(slot) to be released", within: 10) {
            let rows = try connection.query(
                "SELECT active FROM pg_replication_slots WHERE slot_name = $1", [slot])
            if rows.isEmpty { return true }
            if rows[0, 0] == "t" { return false }
            _ = try connection.query("SELECT pg_drop_replication_slot($1)", [slot])
            return true
        }
    }

    /// The new directory, owned by the `postgres` OS user when we are root (pg_basebackup runs as it).
    static func giveToPostgres(_ path: String) throws {
        guard geteuid() == 0 else { return }
        guard let user = getpwnam("postgres"), chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw TestDatabaseError(message: "cannot give \(path) to the postgres OS user")
        }
    }

    /// Runs a PostgreSQL program, as `postgres` (through runuser) when we are root, as
    /// `EmbeddedPostgres` does; its output goes to a file, never a pipe a daemon could hold.
    static func runAsPostgres(_ argv: [String]) throws -> (status: Int32, output: String) {
        var command = argv
        if geteuid() == 0 {
            guard
                let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first(where: {
                    FileManager.default.isExecutableFile(atPath: $0)
                })
            else { throw TestDatabaseError(message: "running as root needs `runuser` (util-linux)") }
            command = [runuser, "-u", "postgres", "--"] + argv
        }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("replica-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try? output.close()
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return (process.terminationStatus, text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
