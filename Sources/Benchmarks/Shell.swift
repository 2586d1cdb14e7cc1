import EventStore
import Foundation

/// Runs the external tools the benchmarks compare against (wrk, pgbench, openssl) and the
/// service binary. Output goes to a file, not a pipe, so a child that forks a daemon can never
/// make us wait for EOF.
enum Shell {
    struct Outcome {
        var status: Int32
        var output: String
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `argv` to completion; returns its exit status and combined stdout+stderr.
    static func run(_ argv: [String], environment: [String: String] = [:]) throws -> Outcome {
        // posix_spawn and waitpid, not Foundation's Process, which never saw `local-cluster up`
        // exit while the daemons it started lived on (Subprocess.run).
        let merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let outcome = Subprocess.run([try resolve(argv[0])] + argv.dropFirst(), environment: merged)
        return Outcome(status: outcome.status, output: outcome.output)
    }

    /// Like `run`, but a non-zero exit is an error carrying the tail of the output.
    @discardableResult
    static func check(_ argv: [String], environment: [String: String] = [:]) throws -> String {
        let outcome = try run(argv, environment: environment)
        guard outcome.status == 0 else {
            throw Failure(
                description: "\(argv.joined(separator: " ")) exited \(outcome.status): \(outcome.output.suffix(800))")
        }
        return outcome.output
    }

    /// Absolute path of a program name found on PATH (or the path itself).
    static func resolve(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        let directories = path.split(separator: ":").map(String.init) + ["/usr/lib/postgresql/15/bin", "/usr/sbin"]
        for directory in directories {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw Failure(
            description: "\(name) not found on PATH (make bench-deps installs wrk; pgbench comes with postgresql)")
    }

    /// A command line as a reader would type it (arguments with spaces quoted).
    static func display(_ argv: [String]) -> String {
        argv.map { arg in
            arg.contains(" ") || arg.contains("'") || arg.isEmpty
                ? "'" + arg.replacingOccurrences(of: "'", with: "'\\''") + "'" : arg
        }.joined(separator: " ")
    }
}
