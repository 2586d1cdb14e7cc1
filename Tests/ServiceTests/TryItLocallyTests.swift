import Foundation
import Glibc
import Testing

/// The README's "Try it locally" walkthrough, cut out of README.md between its markers and run
/// as a shell script with the real binary on PATH, exactly as a newcomer pastes it: so the
/// README and the test store cannot drift apart.
@Suite(.serialized) struct TryItLocallyTests {
    static let begin = "<!-- try-it-locally:begin -->"
    static let end = "<!-- try-it-locally:end -->"

    /// The shell code between the markers (the ```sh fence lines dropped).
    static func script() throws -> String {
        let readme = try String(contentsOfFile: OpsBinary.packageRoot + "/README.md", encoding: .utf8)
        guard let start = readme.range(of: begin), let stop = readme.range(of: end), start.upperBound < stop.lowerBound
        else { throw OpsFailure("README.md has no \(begin) … \(end) section") }
        let lines = readme[start.upperBound..<stop.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
        return lines.filter { !$0.hasPrefix("```") }.joined(separator: "\n") + "\n"
    }

    @Test func theReadmeWalkthroughRunsOnTheTestStore() throws {
        let root = try OpsBinary.temporaryDirectory()
        let data = root + "/data"
        defer {
            Self.stopServe(using: data)
            try? FileManager.default.removeItem(atPath: root)
        }
        let script = try Self.script()
        #expect(script.contains("testkit init"))
        try script.write(toFile: root + "/walkthrough.sh", atomically: true, encoding: .utf8)

        let binaries = URL(fileURLWithPath: OpsBinary.path).deletingLastPathComponent().path
        var environment = OpsBinary.environment(["DATA": data])
        environment["PATH"] = binaries + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["IAP_LEDGER_URL"] = nil
        environment["IAP_LEDGER_KEY"] = nil
        // -e: any failing command fails the walkthrough; -u: so does an unset variable.
        let shell = try OpsChild(["-eu", root + "/walkthrough.sh"], environment: environment, executable: "/bin/sh")
        guard let status = shell.wait(timeout: 300) else {
            shell.kill(SIGKILL)
            throw OpsFailure("the walkthrough did not finish: \(shell.stdout)\n\(shell.stderr)")
        }
        let out = shell.stdout
        #expect(status == 0, "exit \(status)\nstdout:\n\(out)\nstderr:\n\(shell.stderr)")

        // What each step promises, in the order of the steps.
        let expected = [
            "created a test store in",
            #""transactionId":"2000000001","originalTransactionId":"2000000001","productId":"com.example.game.pro.monthly","result":"recorded""#,
            #"{"userId":"u-1","entitlements":{"pro":{"active":true"#,
            #""result":"recorded"}"#,  // the REFUND notification
            #"{"userId":"u-1","entitlements":{"pro":{"active":false"#,
            #""status":"revoked""#,
            #""productId":"com.example.game.coins100","result":"recorded""#,
            #"{"balance":70,"result":"debited"}"#,
            "dry run: replayed 8 events",
            // Under the recorded catalog: a replay run without --config changes nobody.
            "changed users: 0;",
            "nothing was changed (dry run)",
        ]
        var rest = Substring(out)
        for fragment in expected {
            guard let found = rest.range(of: fragment) else {
                Issue.record("missing, in order: \(fragment)\nstdout:\n\(out)\nstderr:\n\(shell.stderr)")
                break
            }
            rest = rest[found.upperBound...]
        }
        // The walkthrough stopped its service, and with it the embedded PostgreSQL.
        #expect(Self.servePIDs(using: data).isEmpty)
        #expect(opsEventually(within: 10) { Self.postmasterPID(data).map(opsProcessIsAlive) != true })
        #expect(!shell.stderr.contains("level=error"), "\(shell.stderr)")
    }

    /// A walkthrough that failed half-way leaves its `serve` running: stop it by its pid.
    static func stopServe(using data: String) {
        for pid in servePIDs(using: data) { kill(pid, SIGTERM) }
        _ = opsEventually(within: 30) { servePIDs(using: data).isEmpty }
        _ = opsEventually(within: 10) { postmasterPID(data).map(opsProcessIsAlive) != true }
    }

    /// `iap-ledger serve … --data-dir <data>` processes (the script's background job).
    static func servePIDs(using data: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard opsProcessIsAlive(pid), let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline")
            else { return false }
            let argv = bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return argv.count > 1 && argv[0].hasSuffix("iap-ledger") && argv[1] == "serve" && argv.contains(data)
        }
    }

    static func postmasterPID(_ data: String) -> Int32? {
        guard let text = try? String(contentsOfFile: data + "/pgdata/postmaster.pid", encoding: .utf8),
              let first = text.split(separator: "\n").first
        else { return nil }
        return Int32(first)
    }
}
