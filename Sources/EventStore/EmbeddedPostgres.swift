import Glibc
import Synchronization

/// A private PostgreSQL cluster under a data directory, run with the system's initdb/pg_ctl.
///
/// Layout of `dataDirectory`: `pgdata/` (the cluster), `server.log`, and the Unix socket
/// `.s.PGSQL.5432`. The server listens on that socket only (`listen_addresses=''`), so it can
/// never clash with another server's port. When we run as root, initdb and pg_ctl run as the
/// `postgres` OS user through `runuser` (PostgreSQL refuses root). Authentication is `trust`,
/// which is safe because the socket's directory is mode 0700 (postgres and root only).
public final class EmbeddedPostgres: Sendable {
    /// Absolute data directory.
    public let dataDirectory: String
    /// The directory holding the Unix socket (the data directory, or a short /tmp path when the
    /// data directory's path is too long for a socket address).
    public let socketDirectory: String
    /// PID of the postmaster started (or found running) by `start`.
    public let postmasterPID: Int32
    static let port = 5432
    static let superuser = "postgres"
    private let tools: Tools
    private let ownsSocketDirectory: Bool
    private let stopped = Mutex(false)
    private let log: @Sendable (String) -> Void

    /// Creates the cluster on first use and starts it; waits until it accepts connections and
    /// the database `iap_ledger` exists. `settings` are extra `-c name=value` server settings.
    public static func start(
        dataDirectory: String, settings: [String: String] = [:], log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(EmbeddedPostgresError) -> EmbeddedPostgres {
        let tools = try Tools.locate()
        let directory = try prepareDirectory(dataDirectory, tools: tools)
        let cluster = directory + "/pgdata"
        if access(cluster + "/PG_VERSION", F_OK) != 0 {
            log("creating PostgreSQL cluster in \(cluster)")
            let result = tools.run([
                tools.initdb, "-D", cluster, "-A", "trust", "-U", superuser, "-E", "UTF8", "--locale=C",
            ])
            guard result.succeeded else {
                throw EmbeddedPostgresError(.initdb, "initdb failed for \(cluster): \(lastLines(result.output, 3))")
            }
        }
        try stopLeftoverServer(cluster: cluster, tools: tools, log: log)

        var socketDirectory = directory
        var ownsSocketDirectory = false
        if (directory + "/.s.PGSQL.\(port)").utf8.count > 107 {
            socketDirectory = try makeShortSocketDirectory(tools: tools)
            ownsSocketDirectory = true
        }
        var options = ["-c", "listen_addresses=", "-k", socketDirectory, "-p", String(port)]
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) { options += ["-c", "\(name)=\(value)"] }
        let logFile = directory + "/server.log"
        let started = tools.run([
            tools.pgCtl, "start", "-w", "-t", "60", "-D", cluster, "-l", logFile,
            "-o", options.map(shellQuoted).joined(separator: " "),
        ])
        guard started.succeeded, let pid = postmasterPID(cluster: cluster) else {
            let tail = lastLines(Subprocess.readFile(logFile) ?? started.output, 4)
            throw EmbeddedPostgresError(.start, "PostgreSQL did not start (log \(logFile)): \(tail)")
        }
        let server = EmbeddedPostgres(
            dataDirectory: directory, socketDirectory: socketDirectory, postmasterPID: pid, tools: tools,
            ownsSocketDirectory: ownsSocketDirectory, log: log)
        log("PostgreSQL \(pid) listening on \(socketDirectory)/.s.PGSQL.\(port)")
        do {
            try server.createDatabase("iap_ledger")
        } catch {
            server.stop()
            throw error
        }
        return server
    }

    private init(
        dataDirectory: String, socketDirectory: String, postmasterPID: Int32, tools: Tools,
        ownsSocketDirectory: Bool, log: @escaping @Sendable (String) -> Void
    ) {
        self.dataDirectory = dataDirectory
        self.socketDirectory = socketDirectory
        self.postmasterPID = postmasterPID
        self.tools = tools
        self.ownsSocketDirectory = ownsSocketDirectory
        self.log = log
    }

    /// The libpq conninfo for `database` as the cluster's superuser over the Unix socket.
    public func connectionString(database: String = "iap_ledger") -> String {
        "host=\(conninfoQuoted(socketDirectory)) port=\(Self.port) user=\(Self.superuser) dbname=\(conninfoQuoted(database))"
    }

    /// Creates `name` unless it exists (the name is quoted as an identifier; it cannot be bound).
    public func createDatabase(_ name: String, template: String? = nil) throws(EmbeddedPostgresError) {
        do {
            let connection = try Connection(connectionString(database: "postgres"), connectTimeout: 10)
            if try connection.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]).isEmpty {
                var sql = "CREATE DATABASE \(quotedIdentifier(name))"
                if let template { sql += " TEMPLATE \(quotedIdentifier(template))" }
                do {
                    try connection.executeScript(sql)
                } catch  where error.sqlState == "42P04" {
                    // Created concurrently by someone else: fine.
                }
            }
        } catch {
            throw EmbeddedPostgresError(.database, "cannot create database \(name): \(error.message)")
        }
    }

    /// Stops the server (`pg_ctl stop -m fast`); safe to call more than once.
    public func stop() {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        let result = tools.run([tools.pgCtl, "stop", "-w", "-t", "60", "-m", "fast", "-D", dataDirectory + "/pgdata"])
        if !result.succeeded, Self.isAlive(postmasterPID) {
            log("pg_ctl stop failed: \(lastLines(result.output, 2)); sending SIGINT")
            kill(postmasterPID, SIGINT)
        }
        // pg_ctl returns once postmaster.pid is gone, a moment before the process itself exits.
        var waited = 0
        while Self.isAlive(postmasterPID) && waited < 30_000 {
            usleep(10_000)
            waited += 10
        }
        if ownsSocketDirectory { rmdir(socketDirectory) }
        log("PostgreSQL \(postmasterPID) stopped")
    }

    /// Arms a watchdog process that shuts the server down (fast mode) if this process dies
    /// without calling `stop()` (crash, SIGKILL), so no server is left running behind it.
    /// With `removingDataDirectory` it then deletes the data directory (throwaway test clusters).
    public func stopWhenProcessExits(removingDataDirectory: Bool = false) {
        let pidFile = dataDirectory + "/pgdata/postmaster.pid"
        var script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            if [ "$(head -n 1 \(shellQuoted(pidFile)) 2>/dev/null)" = "\(postmasterPID)" ]; then
                kill -INT \(postmasterPID)
                while kill -0 \(postmasterPID) 2>/dev/null; do sleep 0.2; done
            fi
            """
        if removingDataDirectory { script += "\nrm -rf \(shellQuoted(dataDirectory))" }
        Subprocess.spawnDetached(["/bin/sh", "-c", script])
    }

    /// Whether `pid` names a live (not zombie) process.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = Subprocess.readFile("/proc/\(pid)/stat"),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state != "Z" && state != "X"
    }
}
