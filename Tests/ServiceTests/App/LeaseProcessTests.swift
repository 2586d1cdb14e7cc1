import EventStore
import Foundation
import Glibc
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Background work runs once across instances, with two real `serve` processes on one database:
/// the holder of every job is `kill -9`ed and the other instance runs them all within 10 s, as
/// its own `GET /v1/admin/projections` and `/metrics` say.
@Suite(.serialized, .tags(.database, .slow)) struct LeaseProcessTests {
    /// The jobs every instance of this config runs (no Apple keys: no reconciler, no responder).
    static let jobs = ["analytics-projector", "change-clock", "webhooks:backend"]

    struct Seen {
        var instance: String
        /// lease name → (holder, held by the instance that answered)
        var leases: [String: (holder: String, heldHere: Bool)]
    }

    static func projections(_ serve: OpsServe, key: String) -> Seen? {
        guard
            let response = try? OpsHTTP.get(
                port: serve.port, "/v1/admin/projections", headers: ["Authorization": "Bearer \(key)"]),
            response.status == 200, let document = try? JSONValue.parse(response.body),
            let instance = document["instance"]?.stringValue, let leases = document["leases"]?.arrayValue
        else { return nil }
        var seen = Seen(instance: instance, leases: [:])
        for lease in leases {
            guard let name = lease["name"]?.stringValue, let holder = lease["holder"]?.stringValue,
                let here = lease["heldHere"]?.boolValue
            else { continue }
            seen.leases[name] = (holder, here)
        }
        return seen
    }

    static func holdsEveryJob(_ seen: Seen?) -> Bool {
        guard let seen else { return false }
        return jobs.allSatisfy { seen.leases[$0]?.heldHere == true && seen.leases[$0]?.holder == seen.instance }
    }

    @Test func theOtherInstanceRunsEveryJobWithinTenSecondsOfTheHoldersKill9() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/config.json"
        // The endpoint need not answer: its deliverer runs (holds its lease) whatever it gets.
        try #"""
        {"webhooks": [{"name": "backend", "url": "http://127.0.0.1:9/hooks", "secret": "\#(WebhookTests.secret)"}]}
        """#.write(toFile: file, atomically: true, encoding: .utf8)
        let key = try APIKeys().create(name: "ops", scopes: ["admin"], on: Connection(conninfo))

        let first = try OpsServe(
            ["--port", "0", "--config", file], environment: ["DATABASE_URL": conninfo, "IAP_LEDGER_INSTANCE": "node-a"])
        var firstAlive = true
        defer { if firstAlive { _ = first.stop(SIGKILL) } }
        try eventually(
            "node-a runs every job: \(String(describing: Self.projections(first, key: key)?.leases))", within: 30
        ) { Self.holdsEveryJob(Self.projections(first, key: key)) }

        // The second instance starts with every job taken: it waits, and says so.
        let second = try OpsServe(["--port", "0", "--config", file], environment: ["DATABASE_URL": conninfo])
        defer { _ = second.stop() }
        let waiting = try #require(Self.projections(second, key: key))
        #expect(waiting.instance.hasSuffix(":\(second.port):\(second.pid)"), "the default name: \(waiting.instance)")
        for job in Self.jobs {
            #expect(waiting.leases[job]?.holder == "node-a" && waiting.leases[job]?.heldHere == false, "\(job)")
        }
        try eventually("the second instance's metrics say it runs none of them", within: 5) {
            let metrics = (try? OpsHTTP.get(port: second.port, "/metrics").body) ?? ""
            return Self.jobs.allSatisfy { metrics.contains("iap_background_lease_held{job=\"\($0)\"} 0") }
        }

        #expect(first.stop(SIGKILL) == 128 + SIGKILL)
        firstAlive = false
        let killed = Date()
        try eventually(
            "node-b to take every job over: \(String(describing: Self.projections(second, key: key)?.leases)); \(second.stderr.suffix(1500))",
            within: 10
        ) { Self.holdsEveryJob(Self.projections(second, key: key)) }
        let seconds = Date().timeIntervalSince(killed)
        print("LeaseProcessTests: every job taken over \(String(format: "%.1f", seconds)) s after kill -9")
        let metrics = try OpsHTTP.get(port: second.port, "/metrics").body
        for job in Self.jobs {
            #expect(metrics.contains("iap_background_lease_held{job=\"\(job)\"} 1"), "\(job)")
        }
        #expect(
            second.stderr.contains("msg=\"lease acquired\"") || second.stderr.contains("msg=lease acquired"),
            "\(second.stderr.suffix(800))")
    }

    @Test func aGracefulStopHandsEveryJobOverAtOnce() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let key = try APIKeys().create(name: "ops", scopes: ["admin"], on: Connection(conninfo))
        let jobs = ["analytics-projector", "change-clock"]
        let first = try OpsServe(
            ["--port", "0"], environment: ["DATABASE_URL": conninfo, "IAP_LEDGER_INSTANCE": "node-a"])
        try eventually(
            "node-a to hold every job",
            within: 30
        ) {
            let seen = Self.projections(first, key: key)
            return jobs.allSatisfy { seen?.leases[$0]?.heldHere == true }
        }
        let second = try OpsServe(
            ["--port", "0"], environment: ["DATABASE_URL": conninfo, "IAP_LEDGER_INSTANCE": "node-b"])
        defer { _ = second.stop() }
        #expect(first.stop(SIGTERM) == 0)
        // Released, not run out: the rows went with the stop, so the next ask (≤ 1 s) takes them.
        let connection = try Connection(conninfo)
        let rows = try connection.query("SELECT holder FROM ops.leases WHERE expires_at > now()")
        #expect((0..<rows.count).allSatisfy { rows[$0, 0] != "node-a" }, "node-a left no live lease behind")
        try eventually("node-b runs them within its next asks", within: 3) {
            let seen = Self.projections(second, key: key)
            return jobs.allSatisfy { seen?.leases[$0]?.heldHere == true }
        }
    }

    @Test(arguments: ["node\nb", String(repeating: "n", count: 201)])
    func aBadInstanceNameStopsStartUpWithOneLineNamingTheVariable(name: String) throws {
        let outcome = try OpsBinary.run(["serve", "--port", "0"], environment: ["IAP_LEDGER_INSTANCE": name])
        #expect(outcome.status == 2)
        #expect(outcome.stderrLines.count == 1, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("IAP_LEDGER_INSTANCE must be 1…200 printable characters"))
        #expect(!outcome.stderr.contains(name), "the bad value is not echoed")
    }
}
