import EventStore
import Foundation
import TestSupport

/// `deploy/local-cluster` driven by the benchmark: `up` in a private directory on a free base
/// port, the ports and pid files the script documents, `down` at the end (also after a failure).
final class LocalCluster {
    let directory: String
    let basePort: Int
    let binary: String
    private var isUp = false

    /// Ports from the base port B (deploy/local-cluster's header): B HAProxy, B+2/B+3 the two
    /// PostgreSQL servers, B+4 PgBouncer, B+5… node1….
    init(directory: String, binary: String, configPath: String) throws {
        self.directory = directory
        self.binary = binary
        basePort = try FreePorts.consecutive(span: 8)
        BenchmarkSuite.say("deploy/local-cluster up --dir \(directory) --base-port \(basePort)")
        try Shell.check([
            "deploy/local-cluster", "up", "--dir", directory, "--base-port", String(basePort),
            "--binary", binary, "--config", configPath,
        ])
        isUp = true
    }

    func down() {
        guard isUp else { return }
        isUp = false
        _ = try? Shell.run(["deploy/local-cluster", "down", "--dir", directory])
    }

    deinit { down() }

    var haproxyURL: String { "http://127.0.0.1:\(basePort)" }
    func nodeURL(_ node: Int) -> String { "http://127.0.0.1:\(basePort + 4 + node)" }

    /// What `up` recorded: which of pg1/pg2 is the primary.
    private func state(_ key: String) -> String? {
        let text = (try? String(contentsOfFile: directory + "/cluster.env", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    private func port(of server: String?) -> Int { server == "pg2" ? basePort + 3 : basePort + 2 }
    var primaryConninfo: String { "postgresql://postgres@127.0.0.1:\(port(of: state("PRIMARY") ?? "pg1"))/iap_ledger" }

    func primary() throws -> Connection { try Connection(primaryConninfo, connectTimeout: 5) }

    func createKey() throws -> String {
        let output = try Shell.check(
            [binary, "keys", "create", "--name", "bench", "--scopes", "read,write"],
            environment: ["DATABASE_URL": primaryConninfo])
        guard let key = output.split(separator: "\n").last.map(String.init), key.hasPrefix("iap_") else {
            throw Shell.Failure(description: "no key in: \(output)")
        }
        return key
    }

    private func pid(_ file: String) -> Int32? {
        (try? String(contentsOfFile: file, encoding: .utf8))?.split(separator: "\n").first.flatMap {
            Int32($0.trimmingCharacters(in: .whitespaces))
        }
    }

    /// CPU seconds of every process on the write path: the instances, HAProxy, PgBouncer and the
    /// primary (postmaster and its live children).
    func cpuSeconds() -> Double {
        let pids = ["node1", "node2", "node3", "haproxy", "pgbouncer"].compactMap { pid(directory + "/run/\($0).pid") }
        let primary = pid(directory + "/\(state("PRIMARY") ?? "pg1")/postmaster.pid")
        return IngestBenchmark.cpuSeconds(of: pids) + (primary.map(IngestBenchmark.cpuSeconds(ofChildrenOf:)) ?? 0)
    }

    /// CPU seconds of the replica (startup process replaying WAL, walreceiver, …).
    func replicaCPUSeconds() -> Double {
        pid(directory + "/\(state("REPLICA") ?? "pg2")/postmaster.pid").map(IngestBenchmark.cpuSeconds(ofChildrenOf:))
            ?? 0
    }
}
