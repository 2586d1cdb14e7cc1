import Glibc
import SystemCalls

/// Runs helper programs (initdb, pg_ctl, runuser) synchronously.
public enum Subprocess {
    public struct Outcome: Sendable {
        public var status: Int32
        /// stdout and stderr, interleaved.
        public var output: String
        public var succeeded: Bool { status == 0 }
    }

    /// Runs `argv` (argv[0] an absolute path) with a minimal environment; stdout and stderr go
    /// to a temporary *file*, not a pipe: a daemon (the postmaster) that inherited a pipe end
    /// would keep it open and make us wait forever for EOF.
    static func run(_ argv: [String]) -> Outcome {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        return run(argv, environment: ["PATH": "\(path):/usr/sbin:/sbin", "LC_ALL": "C"])
    }

    /// Runs `argv` (argv[0] an absolute path) with exactly `environment`, waited for with
    /// waitpid. Also for a program that starts daemons (deploy/local-cluster): Foundation's
    /// `Process.waitUntilExit` was seen to wait forever on such a child, left a zombie while the
    /// daemons it started lived on (its exit watch rides on a descriptor they inherit); waitpid
    /// does not care what the child left running.
    public static func run(_ argv: [String], environment: [String: String]) -> Outcome {
        var template = Array("/tmp/iap-ledger-run-XXXXXX".utf8CString)
        let outputFD = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard outputFD >= 0 else { return Outcome(status: -1, output: "mkstemp: \(SystemCallError.last)") }
        let outputPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer {
            close(outputFD)
            unlink(outputPath)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outputFD, 1)
        posix_spawn_file_actions_adddup2(&actions, outputFD, 2)
        let environment: [String?] = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + [nil]
        var pid: pid_t = 0
        let args: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let env: [UnsafeMutablePointer<CChar>?] = environment.map { $0.map { strdup($0) } ?? nil }
        defer { for pointer in args + env { free(pointer) } }
        let spawned = posix_spawn(&pid, args[0]!, &actions, nil, args, env)
        guard spawned == 0 else { return Outcome(status: -1, output: "\(argv[0]): \(SystemCallError(code: spawned))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && SystemCallError.last.code == EINTR {}
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(status: exitCode, output: readFile(outputPath) ?? "")
    }

    /// The whole file as UTF-8 text, or nil if it cannot be read.
    static func readFile(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Absolute path of `name` found in `directories`, if any.
    static func find(_ name: String, in directories: [String]) -> String? {
        for directory in directories where access(directory + "/" + name, X_OK) == 0 {
            return directory + "/" + name
        }
        return nil
    }
}

extension Subprocess {
    /// Starts `argv` and does not wait for it (a watchdog that must outlive us).
    @discardableResult
    public static func spawnDetached(_ argv: [String]) -> Bool {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let args: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let env: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/bin:/bin:/usr/sbin:/sbin"), nil]
        defer { for pointer in args + env { free(pointer) } }
        var pid: pid_t = 0
        return posix_spawn(&pid, args[0]!, &actions, nil, args, env) == 0
    }
}
