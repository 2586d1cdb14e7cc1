import Foundation
import Glibc
import TestSupport
import Testing

/// Runs the built `iap-ledger` binary the way an operator does: a real process, real signals.
///
/// The binary is the one of *this* build configuration: `swift test` builds every product of
/// the package next to the test bundle (`.build/<triple>/<debug|release>/`), so it is looked up
/// beside the running test executable first, then under `.build/debug` or `.build/release`.
enum OpsBinary {
    static let packageRoot = TestVectors.repoRoot.path

    #if DEBUG
        static let configuration = "debug"
    #else
        static let configuration = "release"
    #endif

    static let path: String = {
        var candidates: [String] = []
        if let testExecutable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: testExecutable).deletingLastPathComponent().path + "/iap-ledger")
        }
        candidates.append("\(packageRoot)/.build/\(configuration)/iap-ledger")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates.last!
    }()

    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
        var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// The environment of a child: the test's own, minus anything that would change what the
    /// command does, plus `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in [
            "DATABASE_URL", "PORT", "IAP_LEDGER_CONFIG", "IAP_LEDGER_HOST", "IAP_LEDGER_KEY_CACHE_SECONDS",
            "IAP_LEDGER_INSTANCE", "IAP_LEDGER_MIGRATIONS",
        ] {
            environment[name] = nil
        }
        environment["DATABASE_READ_URL"] = nil
        for (name, value) in extra { environment[name] = value }
        // IAP_TEST_DATABASE_VIA=pgbouncer: a test database's URL goes through PgBouncer.
        return PgBouncer.childEnvironment(environment)
    }

    /// Runs a command to completion (killing it after `timeout` seconds), in `workingDirectory`
    /// when given (the test's own otherwise).
    static func run(
        _ arguments: [String], environment extra: [String: String] = [:], executable: String = path,
        workingDirectory: String? = nil, timeout: Double = 120
    ) throws -> Outcome {
        let child = try OpsChild(
            arguments, environment: environment(extra), executable: executable, workingDirectory: workingDirectory)
        guard let status = child.wait(timeout: timeout) else {
            child.kill(SIGKILL)
            _ = child.wait(timeout: 10)
            throw OpsFailure("iap-ledger \(arguments) did not finish within \(timeout) s: \(child.stderr)")
        }
        return Outcome(status: status, stdout: child.stdout, stderr: child.stderr)
    }

    /// A fresh directory whose parents the `postgres` OS user can search (we may run as root).
    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/iap-ops-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw OpsFailure("mkdtemp: \(String(cString: strerror(errno)))")
        }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        chmod(path, 0o755)
        return path
    }
}

struct OpsFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A child process started with posix_spawn, its stdout and stderr going to files (not pipes:
/// a daemon it starts, such as the postmaster, could inherit a pipe and hold it open forever).
/// Reaped with waitpid on its own pid, so nothing depends on a SIGCHLD handler.
final class OpsChild {
    let pid: pid_t
    private let directory: String
    private var exitStatus: Int32?

    /// `executable` is the `iap-ledger` binary unless a test runs something else (a shell script).
    init(
        _ arguments: [String], environment: [String: String], executable: String = OpsBinary.path,
        workingDirectory: String? = nil
    ) throws {
        directory = try OpsBinary.temporaryDirectory()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, directory + "/stdout", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, directory + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Swift's Glibc module lacks posix_spawn_file_actions_addchdir_np: env -C changes the
        // directory and execs the binary, keeping the pid.
        let command = workingDirectory.map { ["/usr/bin/env", "-C", $0, executable] } ?? [executable]
        let argv: [UnsafeMutablePointer<CChar>?] = (command + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        // A child starts as from a shell: no blocked signals, default dispositions. The test process
        // blocks some (SIGTERM among them) for its own in-process services, and a spawned child
        // inherits the mask: a python3 or bash child then ignored kill and outlived its test.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let spawned = posix_spawn(&pid, argv[0]!, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw OpsFailure("posix_spawn: \(String(cString: strerror(spawned)))") }
        self.pid = pid
    }

    deinit {
        if exitStatus == nil {
            Glibc.kill(pid, SIGKILL)
            _ = wait(timeout: 10)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    var stdout: String { (try? String(contentsOfFile: directory + "/stdout", encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: directory + "/stderr", encoding: .utf8)) ?? "" }
    var isRunning: Bool { poll() == nil }

    func kill(_ signal: Int32) { if exitStatus == nil { Glibc.kill(pid, signal) } }

    /// The exit status (128 + signal when killed by one), or nil while it runs.
    func poll() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return exitStatus
    }

    /// Waits for the exit status; nil if it still runs after `timeout` seconds.
    func wait(timeout: Double) -> Int32? {
        try? eventually("the child to exit", within: timeout) { poll() != nil }
        return poll()
    }
}

/// A running `iap-ledger serve` child process.
final class OpsServe {
    let child: OpsChild
    private(set) var url = ""
    var port: Int { Int(url.split(separator: ":").last ?? "") ?? 0 }
    var pid: Int32 { child.pid }
    var stderr: String { child.stderr }

    /// Starts `serve` and waits for its "listening on" line (fails with its stderr otherwise).
    init(
        _ arguments: [String], environment extra: [String: String] = [:], executable: String = OpsBinary.path,
        workingDirectory: String? = nil, timeout: Double = 120
    ) throws {
        child = try OpsChild(
            ["serve"] + arguments, environment: OpsBinary.environment(extra), executable: executable,
            workingDirectory: workingDirectory)
        let prefix = "iap-ledger listening on "
        var line: Substring?
        try? eventually("serve to say where it listens", within: timeout) { [child] in
            line = child.stdout.split(separator: "\n").first(where: { $0.hasPrefix(prefix) })
            return line != nil || !child.isRunning
        }
        if let line {
            url = String(line.dropFirst(prefix.count))
            return
        }
        child.kill(SIGKILL)
        _ = child.wait(timeout: 10)
        throw OpsFailure("serve did not come up: \(child.stderr)")
    }

    /// Sends `signal` and waits for the exit status (nil if it is still running after `timeout`).
    func stop(_ signal: Int32 = SIGTERM, timeout: Double = 60) -> Int32? {
        child.kill(signal)
        return child.wait(timeout: timeout)
    }
}

/// One GET (Connection: close) through the tests' HTTP client, with the body as text.
enum OpsHTTP {
    struct Response {
        var status: Int
        var headers: [String: String]  // lower-cased names
        var body: String
    }

    static func get(port: Int, _ path: String, headers: [String: String] = [:]) throws -> Response {
        let connection = try HTTPTestConnection(port: port)
        let response = try connection.request(
            "GET", path, orderedHeaders: [("Connection", "close")] + headers.map { ($0.key, $0.value) })
        return Response(status: response.status, headers: response.headers, body: response.text)
    }

    /// Whether anything accepts TCP connections on 127.0.0.1:port.
    static func isListening(port: Int) -> Bool {
        (try? HTTPTestConnection(port: port)) != nil
    }
}

/// Whether `pid` is a live process (a zombie awaiting its reaper counts as gone).
func opsProcessIsAlive(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return false }
    let state = stat[stat.index(after: close)...].split(separator: " ").first
    return state != "Z" && state != "X"
}

@Suite(.tags(.database)) struct CLIHarnessTests {
    @Test func theBinaryOfThisBuildConfigurationExists() throws {
        #expect(FileManager.default.isExecutableFile(atPath: OpsBinary.path), "\(OpsBinary.path)")
        // Built by `swift test` together with the tests, into the same directory.
        let tests = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(
            URL(fileURLWithPath: OpsBinary.path).deletingLastPathComponent().path
                == URL(fileURLWithPath: tests).deletingLastPathComponent().path)
        #expect(OpsBinary.path.contains("/\(OpsBinary.configuration)/"))
    }

    @Test(arguments: [
        [], ["--help"], ["help"], ["serve", "--help"], ["migrate", "--help"], ["keys", "--help"],
        ["keys", "create", "--help"], ["verify", "--help"], ["replay", "--help"], ["psql", "--help"],
    ])
    func helpWorksOnEveryCommand(arguments: [String]) throws {
        let outcome = try OpsBinary.run(arguments)
        if arguments.isEmpty {
            #expect(outcome.status == 2)  // no command: usage on stderr
            #expect(outcome.stderr.contains("usage: iap-ledger"))
        } else {
            #expect(outcome.status == 0, "\(outcome.stderr)")
            #expect(outcome.stdout.contains("usage: iap-ledger"))
            #expect(outcome.stderr.isEmpty)
        }
    }
}
