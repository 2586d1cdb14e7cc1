import EventStore
import Foundation
import Synchronization
import SystemCalls

/// A real PgBouncer (Debian's `/usr/sbin/pgbouncer`, the `pgbouncer` package) in
/// `pool_mode = transaction` in front of a test cluster: what a deployment that puts many
/// instances on one PostgreSQL runs, so the tests see what it does to session state.
///
/// It listens on a Unix socket only, in a private directory of its own (no TCP port to clash
/// with), and logs every client in as the cluster's superuser (`auth_type = any`: the socket's
/// directory is mode 0700, as the cluster's is). `default_pool_size` is small so that clients
/// really share server sessions. As root it runs as the `postgres` OS user (PgBouncer refuses
/// root), like EmbeddedPostgres does with runuser.
public final class PgBouncer: Sendable {
    /// Holds the socket, the config, the log and the pid file.
    public let directory: String
    public let pid: Int32
    public static let port = 6432
    private let stopped = Mutex(false)

    /// When `IAP_TEST_DATABASE_VIA=pgbouncer`: the test harnesses (TestService, the CLI harness)
    /// put a PgBouncer in transaction mode in front of every test database and run the service
    /// with `DATABASE_POOL_MODE=transaction` (`make test-release` runs the suite so).
    public static var testDatabasesVia: Bool {
        ProcessInfo.processInfo.environment["IAP_TEST_DATABASE_VIA"] == "pgbouncer"
    }

    /// Server sessions per database and user: small, so 8 pooled connections of a service share 4.
    public static let defaultPoolSize = 4

    /// Starts one in front of `server` (every database on it, `* =`); waits until it answers.
    public static func start(
        inFrontOf server: EmbeddedPostgres, poolSize: Int = defaultPoolSize
    ) throws -> PgBouncer {
        let program = "/usr/sbin/pgbouncer"
        guard access(program, X_OK) == 0 else {
            throw TestDatabaseError(message: "\(program) not found: install the `pgbouncer` package (make deps)")
        }
        var template = Array("/tmp/iap-pgbouncer-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw TestDatabaseError(message: "mkdtemp failed: \(SystemCallError.last)")
        }
        let directory = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let asPostgres = geteuid() == 0
        if asPostgres {
            guard let user = getpwnam("postgres"), chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) == 0
            else {
                throw TestDatabaseError(message: "cannot give \(directory) to the postgres OS user")
            }
        }
        let config = """
            [databases]
            * = host=\(server.socketDirectory) port=5432 user=postgres

            [pgbouncer]
            listen_addr =
            listen_port = \(port)
            unix_socket_dir = \(directory)
            unix_socket_mode = 0700
            auth_type = any
            pool_mode = transaction
            max_client_conn = 1000
            default_pool_size = \(poolSize)
            ; transaction mode: a session is handed back as the transaction ends, nothing to reset
            server_reset_query =
            ignore_startup_parameters = extra_float_digits
            ; PostgreSQL unreachable: fail a waiting client after 5 s (the service answers 503)
            ; instead of holding it for the default 120 s, longer than any HTTP client waits
            query_wait_timeout = 5
            ; and try PostgreSQL again at once once it is back (default: refuse clients for 15 s)
            server_login_retry = 0
            ; every test has its own database, so each leaves up to default_pool_size server sessions
            ; behind: held the default 600 s, a whole suite's worth passes the cluster's
            ; max_connections and later tests are refused. Close them once idle for a second.
            server_idle_timeout = 1
            logfile = \(directory)/pgbouncer.log
            pidfile = \(directory)/pgbouncer.pid
            log_connections = 0
            log_disconnections = 0

            """
        let configPath = directory + "/pgbouncer.ini"
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        if asPostgres, let user = getpwnam("postgres") {
            _ = chown(configPath, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        // In the foreground (not -d), started with posix_spawn and not waited for: the pid file
        // names the daemon itself (runuser stays its parent when we are root).
        let argv = (asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + [program, configPath]
        guard Subprocess.spawnDetached(argv) else { throw TestDatabaseError(message: "cannot start \(program)") }
        guard let pid = Self.readPID(directory + "/pgbouncer.pid") else {
            let log = (try? String(contentsOfFile: directory + "/pgbouncer.log", encoding: .utf8)) ?? ""
            throw TestDatabaseError(
                message: "pgbouncer did not start: \(log.split(separator: "\n").suffix(3).joined(separator: " | "))")
        }
        let bouncer = PgBouncer(directory: directory, pid: pid)
        bouncer.stopWhenProcessExits()
        // The pid file comes before the socket: wait until it takes connections.
        do {
            try eventually("pgbouncer \(pid) to answer on \(directory)", within: 5, every: 0.01) {
                Connection.ping(bouncer.connectionString(database: "postgres"), timeout: 2)
            }
            return bouncer
        } catch {
            bouncer.stop()
            throw TestDatabaseError(message: "\(error)")
        }
    }

    private init(directory: String, pid: Int32) {
        self.directory = directory
        self.pid = pid
    }

    /// The libpq conninfo of `database` through this PgBouncer.
    public func connectionString(database: String) -> String {
        "host=\(directory) port=\(Self.port) user=postgres dbname=\(database)"
    }

    /// `conninfo` of a database on the cluster behind, rewritten to go through this PgBouncer.
    public func connectionString(replacing conninfo: String) throws -> String {
        guard let database = ConnectionTarget(conninfo: conninfo)?.database else {
            throw TestDatabaseError(message: "no dbname in \(conninfo)")
        }
        return connectionString(database: database)
    }

    /// Immediate shutdown (SIGTERM; SIGINT would wait for every client to go) and the directory removed.
    public func stop() {
        let already = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !already else { return }
        kill(pid, SIGTERM)
        try? eventually("pgbouncer \(pid) to exit", within: 2, every: 0.01) { kill(pid, 0) != 0 }
        // pgbouncer 1.18 was seen to outlive SIGTERM here: a test's bouncer must not stay behind.
        if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A crashed test process must not leave the daemon behind: a shell waits for us, then ends it.
    private func stopWhenProcessExits() {
        let script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            kill -TERM \(pid) 2>/dev/null; sleep 1; kill -KILL \(pid) 2>/dev/null; rm -rf '\(directory)'
            """
        Subprocess.spawnDetached(["/bin/sh", "-c", script])
    }

    private static func readPID(_ path: String) -> Int32? {
        var pid: Int32?
        try? eventually("\(path) to name the pid", within: 5, every: 0.01) {
            pid = (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
                Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            return pid != nil
        }
        return pid
    }
}

extension PgBouncer {
    private static let sharedBouncer = Mutex<PgBouncer?>(nil)

    /// One PgBouncer per test process in front of the shared test cluster, started on first use.
    public static func shared() throws -> PgBouncer {
        let server = try TestDatabase.shared.server()
        return try sharedBouncer.withLock { bouncer throws -> PgBouncer in
            if let bouncer { return bouncer }
            let started = try PgBouncer.start(inFrontOf: server)
            bouncer = started
            return started
        }
    }

    /// What a test service connects with for the test database `conninfo`: through the shared
    /// PgBouncer in transaction mode when `IAP_TEST_DATABASE_VIA=pgbouncer`, else directly.
    public static func serviceTarget(for conninfo: String) throws -> (conninfo: String, poolMode: PoolMode) {
        guard testDatabasesVia else { return (conninfo, .session) }
        return (try shared().connectionString(replacing: conninfo), .transaction)
    }
}

extension PgBouncer {
    /// A child process's environment with its `DATABASE_URL`, when that is a database of the
    /// shared test cluster, sent through the shared PgBouncer (`DATABASE_POOL_MODE=transaction`
    /// unless the test set one) if `IAP_TEST_DATABASE_VIA=pgbouncer`; anything else (a dead port,
    /// no URL) is left alone.
    public static func childEnvironment(_ environment: [String: String]) -> [String: String] {
        guard testDatabasesVia, let url = environment["DATABASE_URL"], let server = try? TestDatabase.shared.server(),
            ConnectionTarget(conninfo: url)?.host == server.socketDirectory,
            let routed = try? serviceTarget(for: url)
        else { return environment }
        var environment = environment
        environment["DATABASE_URL"] = routed.conninfo
        // A pool mode the test set itself (a bad one, to see it refused) is its to keep.
        if environment["DATABASE_POOL_MODE"] == nil { environment["DATABASE_POOL_MODE"] = routed.poolMode.rawValue }
        return environment
    }
}
