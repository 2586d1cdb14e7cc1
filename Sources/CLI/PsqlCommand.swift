import Arguments
import EventStore
import Foundation
import Glibc
import Infrastructure
import Service
import SystemCalls

/// `iap-ledger psql [--role iap_analyst|iap_ledger_service] [--data-dir DIR] [-- PSQL-ARGS…]`:
/// psql on the service's database, found exactly as every other command finds it
/// (DatabaseLocator), so nobody has to dig out the embedded cluster's socket directory.
package enum PsqlCommand {
    package static let usage = """
        usage: iap-ledger psql [--role iap_analyst|iap_ledger_service] [--data-dir DIR] [-- PSQL-ARGS…]
          opens psql on the service's database (DATABASE_URL, else the embedded cluster of --data-dir,
          default ./.iap-ledger) as its superuser; --role switches to that role first (SET ROLE).
          Arguments after -- go to psql as they are (e.g. -- -At -c 'SELECT 1').
        """

    /// The roles the migrations create; any other name is a typo, refused before psql starts.
    package static let roles = ["iap_analyst", ServiceRole.name]

    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["role", "data-dir"], switches: [])
        if parsed.wantsHelp {
            print(usage)
            return 0
        }
        if let role = parsed.options["role"], !roles.contains(role) {
            throw CommandLineArguments.UsageError(
                description: "--role must be \(roles.joined(separator: " or ")), got \"\(role)\"")
        }
        guard let psql = EmbeddedPostgres.clientProgram("psql") else {
            throw ServiceApp.StartupError(
                description: "psql was not found: install it (Debian: apt-get install postgresql-client)")
        }
        return try DatabaseLocator.withDatabase(dataDirectory: parsed.options["data-dir"]) { conninfo, temporary in
            // The conninfo goes through libpq's environment variables, not argv, so a password
            // in DATABASE_URL is not shown by `ps`.
            guard var variables = ConnectionTarget.environment(for: conninfo) else {
                throw ServiceApp.StartupError(
                    description: "psql cannot be pointed at this DATABASE_URL (libpq cannot parse it)")
            }
            // psql inherits the environment (libpq's own PG* variables are not settings of ours).
            var environment = CommandLineInterface.processEnvironment
            if let role = parsed.options["role"] {
                // Applied by the server when the session starts: the same as SET ROLE (the
                // connecting superuser is a member of both roles, see migrations 0001 and 0022).
                let inherited = variables["PGOPTIONS"] ?? environment["PGOPTIONS"].flatMap { $0.isEmpty ? nil : $0 }
                variables["PGOPTIONS"] = [inherited, "-c role=\(role)"].compactMap { $0 }.joined(separator: " ")
            }
            for (name, value) in variables { environment[name] = value }
            let argv = [psql] + parsed.positionals
            fflush(nil)
            // A cluster started for this command must be stopped when psql ends: psql runs as a
            // child then. Otherwise psql replaces this process, so the terminal is all psql's.
            return temporary
                ? try spawnAndWait(argv, environment: environment) : try exec(argv, environment: environment)
        }
    }

    private static func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] {
        strings.map { strdup($0) } + [nil]
    }

    private static func exec(_ argv: [String], environment: [String: String]) throws -> Int32 {
        let args = cStrings(argv)
        let envp = cStrings(environment.map { "\($0.key)=\($0.value)" })
        execve(argv[0], args, envp)
        let reason = SystemCallError.last
        for pointer in args + envp { free(pointer) }
        throw ServiceApp.StartupError(description: "cannot run \(argv[0]): \(reason)")
    }

    /// Like system(3): the terminal's Ctrl-C and Ctrl-\ go to psql (which cancels a query on
    /// them), not to us, while it runs; psql gets the default dispositions back.
    private static func spawnAndWait(_ argv: [String], environment: [String: String]) throws -> Int32 {
        let args = cStrings(argv)
        let envp = cStrings(environment.map { "\($0.key)=\($0.value)" })
        defer { for pointer in args + envp { free(pointer) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGQUIT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        let previousInterrupt = signal(SIGINT, SIG_IGN)
        let previousQuit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, previousInterrupt)
            signal(SIGQUIT, previousQuit)
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], nil, &attributes, args, envp)
        guard spawned == 0 else {
            throw ServiceApp.StartupError(description: "cannot run \(argv[0]): \(SystemCallError(code: spawned))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && SystemCallError.last.code == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
