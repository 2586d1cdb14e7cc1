import Foundation
import Glibc
import TestSupport
import Testing

/// `iap-ledger serve` as a real process on a machine that never ran it: no DATABASE_URL, a data
/// directory that does not exist yet. It must come up, answer, and leave nothing behind.
@Suite(.serialized, .tags(.database, .slow)) struct OpsServeProcessTests {
    @Test(arguments: [SIGTERM, SIGINT])
    func serveOnAFreshDataDirectoryComesUpAndLeavesNothingRunningAfterTheSignal(signal: Int32) throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dataDirectory = root + "/never/existed"
        #expect(!FileManager.default.fileExists(atPath: dataDirectory))

        let serve = try OpsServe(["--port", "0", "--data-dir", dataDirectory])
        #expect(serve.url.hasPrefix("http://127.0.0.1:"))
        #expect(serve.port > 0)
        let health = try OpsHTTP.get(port: serve.port, "/healthz")
        #expect(health.status == 200)
        #expect(try OpsHTTP.get(port: serve.port, "/readyz").status == 200)

        let postmaster = try #require(Self.postmasterPID(dataDirectory), "postmaster.pid while serving")
        #expect(opsProcessIsAlive(postmaster))

        #expect(serve.stop(signal) == 0, "exit status after signal \(signal); stderr: \(serve.stderr)")
        try eventually("postmaster \(postmaster) still runs", within: 10) { !opsProcessIsAlive(postmaster) }
        #expect(Self.postmasterPID(dataDirectory) == nil, "postmaster.pid left behind")
        #expect(!OpsHTTP.isListening(port: serve.port), "port \(serve.port) still accepts connections")
        try eventually("the watchdog outlived serve", within: 5) { Self.watchdogs(of: serve.pid).isEmpty }
        let log = serve.stderr
        #expect(log.contains("msg=stopped"))
        #expect(!log.contains("level=error"), "\(log)")
    }

    @Test func aKilledServeLeavesNoPostgreSQLRunning() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dataDirectory = root + "/data"
        let serve = try OpsServe(["--port", "0", "--data-dir", dataDirectory])
        let postmaster = try #require(Self.postmasterPID(dataDirectory))

        #expect(Self.watchdogs(of: serve.pid).count == 1)
        #expect(serve.stop(SIGKILL) == 128 + SIGKILL)
        // The watchdog polls once a second, then shuts the cluster down in fast mode.
        try eventually("postmaster \(postmaster) outlived serve", within: 30) { !opsProcessIsAlive(postmaster) }

        // The next run on the same directory starts cleanly.
        let again = try OpsServe(["--port", "0", "--data-dir", dataDirectory])
        #expect(try OpsHTTP.get(port: again.port, "/readyz").status == 200)
        #expect(again.stop() == 0)
    }

    @Test func aSecondServeOnTheSameDataDirectoryIsRefusedAndTheFirstKeepsWorking() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dataDirectory = root + "/data"
        let first = try OpsServe(["--port", "0", "--data-dir", dataDirectory])

        let second = try OpsBinary.run(["serve", "--port", "0", "--data-dir", dataDirectory])
        #expect(second.status == 1)
        #expect(second.stderrLines.count == 1, "\(second.stderr)")
        #expect(second.stderr.contains("is in use by another iap-ledger serve (pid \(first.pid))"))

        // `keys` shares the running cluster instead of stopping it.
        let created = try OpsBinary.run([
            "keys", "create", "--name", "ops", "--scopes", "read", "--data-dir", dataDirectory,
        ])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try OpsHTTP.get(port: first.port, "/readyz").status == 200)
        #expect(first.stop() == 0)
    }

    @Test func portZeroFromThePORTVariablePrintsTheRealURL() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let serve = try OpsServe([], environment: ["DATABASE_URL": conninfo, "PORT": "0"])
        #expect(serve.port > 0)
        #expect(serve.url == "http://127.0.0.1:\(serve.port)")
        #expect(try OpsHTTP.get(port: serve.port, "/healthz").status == 200)
        #expect(serve.stop() == 0)
    }

    /// Processes still watching `pid` (the embedded cluster's watchdog shell).
    static func watchdogs(of pid: Int32) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.filter { $0.allSatisfy(\.isNumber) }.filter { entry in
            guard let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return false }
            return String(decoding: data, as: UTF8.self).contains("while kill -0 \(pid) ")
        }
    }

    static func postmasterPID(_ dataDirectory: String) -> Int32? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/pgdata/postmaster.pid", encoding: .utf8),
            let first = text.split(separator: "\n").first
        else { return nil }
        return Int32(first)
    }
}
