import EventStore
import Foundation
import Glibc
import JSON
import Synchronization
import TestSupport
import Testing

/// The cluster tests (issue 16, "Must show"): each starts the real `deploy/local-cluster` in a
/// temp directory on free ports, talks to HAProxy, the instances, PgBouncer and both PostgreSQL
/// servers over TCP on 127.0.0.1, and runs `down` whatever happens.
@Suite(.tags(.database, .cluster, .slow)) struct ClusterTests {}

/// One `deploy/local-cluster up` (a primary, a streaming replica, PgBouncer, three `serve`
/// instances of this build, HAProxy), stopped by `down()` or at deinit.
final class LocalCluster {
    static let script = OpsBinary.packageRoot + "/deploy/local-cluster"
    /// PgBouncer's pool mode, the script's default: the usual way to put many instances on one
    /// PostgreSQL (the service keeps no session state, DATABASE_POOL_MODE=transaction).
    static let poolMode = "transaction"
    static let coins = TestService.coins
    /// A product granting 10 coins, for the debit race (a balance of exactly 10).
    static let coins10 = "com.example.coins10"

    let root: String
    let directory: String
    let basePort: Int
    let key: String
    private var isDown = false

    var haproxyPort: Int { basePort }
    var statsPort: Int { basePort + 1 }
    var pgbouncerPort: Int { basePort + 4 }
    /// node1…node3, in order.
    var instancePorts: [Int] { [basePort + 5, basePort + 6, basePort + 7] }
    func postgresPort(_ name: String) -> Int { name == "pg1" ? basePort + 2 : basePort + 3 }

    init() throws {
        root = try OpsBinary.temporaryDirectory()
        directory = root + "/cluster"
        basePort = try FreePorts.consecutive(span: 8)  // B…B+7, deploy/local-cluster's layout
        let config = try Self.writeConfiguration(in: root)
        let up = try Self.run(
            [
                "up", "--dir", directory, "--base-port", String(basePort), "--binary", OpsBinary.path,
                "--config", config, "--pool-mode", Self.poolMode,
            ],
            timeout: 150)
        guard up.status == 0 else {
            _ = try? Self.run(["down", "--dir", directory], timeout: 60)
            throw OpsFailure(
                "local-cluster up failed (\(up.status)):\n\(up.stdout)\n\(up.stderr)\n\(Self.logTails(directory))")
        }
        key = try String(contentsOfFile: directory + "/api-key", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit { down() }

    /// `local-cluster down`, then the temp directory goes (PostgreSQL's files included).
    func down() {
        guard !isDown else { return }
        isDown = true
        let outcome = try? Self.run(["down", "--dir", directory], timeout: 90)
        if outcome?.status != 0 { Issue.record("local-cluster down: \(outcome?.stderr ?? "did not run")") }
        try? FileManager.default.removeItem(atPath: root)
    }

    func command(_ verb: String, timeout: Double = 120) throws -> OpsBinary.Outcome {
        try Self.run([verb, "--dir", directory], timeout: timeout)
    }

    static func run(_ arguments: [String], timeout: Double) throws -> OpsBinary.Outcome {
        var environment = OpsBinary.environment([:])
        environment["POOL_MODE"] = nil
        let child = try OpsChild(arguments, environment: environment, executable: script)
        guard let status = child.wait(timeout: timeout) else {
            child.kill(SIGKILL)
            _ = child.wait(timeout: 10)
            throw OpsFailure("local-cluster \(arguments) did not finish within \(timeout) s: \(child.stderr)")
        }
        return OpsBinary.Outcome(status: status, stdout: child.stdout, stderr: child.stderr)
    }

    /// The pid `up` recorded for node1…node3, pgbouncer or haproxy.
    func pid(_ component: String) throws -> Int32 {
        let text = try String(contentsOfFile: directory + "/run/\(component).pid", encoding: .utf8)
        guard let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw OpsFailure("no pid for \(component): \(text)")
        }
        return pid
    }

    /// Every process of the cluster: the pids in run/ and each PostgreSQL's postmaster.
    func allPids() -> [String: Int32] {
        var pids: [String: Int32] = [:]
        for component in ["node1", "node2", "node3", "pgbouncer", "haproxy"] { pids[component] = try? pid(component) }
        for server in ["pg1", "pg2"] {
            let text = (try? String(contentsOfFile: directory + "/\(server)/postmaster.pid", encoding: .utf8)) ?? ""
            pids[server] = text.split(separator: "\n").first.flatMap { Int32($0) }
        }
        return pids
    }

    /// A client of HAProxy (nil) or of one instance directly (0…2).
    func client(_ instance: Int? = nil) -> ServiceHTTPClient {
        ServiceHTTPClient(port: instance.map { instancePorts[$0] } ?? haproxyPort, apiKey: key)
    }

    /// A superuser connection to pg1 or pg2, straight to PostgreSQL.
    func postgres(_ name: String) throws -> Connection {
        try Connection("host=127.0.0.1 port=\(postgresPort(name)) user=postgres dbname=iap_ledger", connectTimeout: 5)
    }

    /// name → status (UP, DOWN, …) of each instance as HAProxy's health checks see it, from
    /// `local-cluster status` (which reads HAProxy's stats CSV).
    func haproxyServers() throws -> [String: String] {
        var servers: [String: String] = [:]
        for line in try command("status").stdout.split(separator: "\n") where line.hasPrefix("node") {
            let words = line.split(separator: " ")
            if let name = words.first, let check = words.last, words.dropLast().last == "haproxy" {
                servers[String(name)] = String(check)
            }
        }
        return servers
    }

    /// HAProxy's request log (deploy/haproxy.cfg's log-format), one dictionary per line.
    func haproxyLog() -> [[String: String]] {
        let text = (try? String(contentsOfFile: directory + "/log/haproxy.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("server=") else { return nil }
            var fields: [String: String] = [:]
            for word in line.split(separator: " ") {
                let parts = word.split(separator: "=", maxSplits: 1)
                if parts.count == 2 {
                    fields[String(parts[0])] = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                }
            }
            return fields
        }
    }

    /// A consumable purchase minted with the test PKI, posted through `client`.
    static func purchase(
        _ client: ServiceHTTPClient, user: String, transactionId: String, product: String = coins,
        headers: [String: String] = [:]
    ) throws -> ServiceHTTPClient.Response {
        let now = TestVectors.nowMillis
        let fields = Mint.transaction(
            transactionId, product: product, type: "Consumable", purchase: now - hour, expires: nil, signed: now - hour)
        return try client.post(
            "/v1/purchases",
            .object(["userId": .string(user), "signedTransaction": .string(Mint.signed(fields))]), headers: headers)
    }

    /// The transaction ids in a user's event history (read from `client`).
    static func recordedTransactions(_ client: ServiceHTTPClient, user: String) throws -> Set<String> {
        var ids = Set<String>()
        for event in try client.events(user) {
            if let id = event["data"]?["transactionId"]?.stringValue { ids.insert(id) }
        }
        return ids
    }

    /// A config trusting the test root for the tests' app (Sandbox, Production), no Apple calls.
    static func writeConfiguration(in directory: String) throws -> String {
        try Data(TestVectors.shared.rootDER).write(to: URL(fileURLWithPath: directory + "/root.der"))
        let file = directory + "/config.json"
        try """
        {"apps": [{"bundleId": "\(TestVectors.bundleId)", "appAppleId": \(TestVectors.appAppleId),
                   "environments": ["Sandbox", "Production"],
                   "products": {"\(coins)": {"type": "consumable", "grants": {"coins": 100}},
                                "\(coins10)": {"type": "consumable", "grants": {"coins": 10}}}}],
         "trustedRoots": ["root.der"], "reconcile": {"intervalSeconds": 0}}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// The last lines of every log, for a failure message.
    static func logTails(_ directory: String) -> String {
        let logs = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/log")) ?? []
        return logs.sorted().map { name in
            let text = (try? String(contentsOfFile: directory + "/log/" + name, encoding: .utf8)) ?? ""
            return "== \(name)\n" + text.split(separator: "\n").suffix(5).joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

/// Clients posting consumable purchases through HAProxy in a loop (each its own connection and
/// user, each purchase a new transaction) until `stop()`; every answer is kept.
final class ClusterLoad: @unchecked Sendable {
    struct Outcome: Sendable {
        var client: Int
        var transactionId: String
        var status: Int  // -1: no HTTP answer at all
        var servedBy: String?
        var text: String
        var acknowledged: Bool { status == 200 }
    }

    private let outcomes = Mutex<[Outcome]>([])
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchGroup()
    let clients: Int

    /// Transaction ids are `prefix` × 1 000 000 + client × 10 000 + n. `reads`: each client
    /// reads its user's history instead (GET, which HAProxy may replay on another instance).
    init(_ cluster: LocalCluster, clients: Int, prefix: Int, reads: Bool = false) {
        self.clients = clients
        let port = cluster.haproxyPort
        let key = cluster.key
        for client in 0..<clients {
            done.enter()
            Thread.detachNewThread { [self] in
                defer { done.leave() }
                let connection = ServiceHTTPClient(port: port, apiKey: key)
                var n = 0
                while !stopping.load(ordering: .relaxed) {
                    let id = String(prefix * 1_000_000 + client * 10_000 + n)
                    n += 1
                    var outcome = Outcome(client: client, transactionId: id, status: -1, servedBy: nil, text: "")
                    do {
                        // X-Client-Request lands in HAProxy's log: which instance had this request.
                        let response =
                            reads
                            ? try connection.get(
                                "/v1/users/\(Self.user(client))/events", headers: ["X-Client-Request": id])
                            : try LocalCluster.purchase(
                                connection, user: Self.user(client), transactionId: id,
                                headers: ["X-Client-Request": id])
                        outcome.status = response.status
                        outcome.servedBy = response.headers["x-served-by"]
                        outcome.text = String(response.text.prefix(300))
                    } catch {
                        outcome.text = "\(error)"
                    }
                    outcomes.withLock { $0.append(outcome) }
                }
            }
        }
    }

    static func user(_ client: Int) -> String { "u-load-\(client)" }

    var all: [Outcome] { outcomes.withLock { $0 } }
    var acknowledgedCount: Int { outcomes.withLock { $0.filter(\.acknowledged).count } }

    /// Waits (up to `seconds`) until `count` more purchases than now were acknowledged.
    func waitForAcknowledged(_ count: Int, within seconds: Double) throws {
        let target = acknowledgedCount + count
        try eventually("\(count) more acknowledged writes (\(acknowledgedCount) in all)", within: seconds) {
            acknowledgedCount >= target
        }
    }

    func stop() -> [Outcome] {
        stopping.store(true, ordering: .relaxed)
        done.wait()
        return all
    }
}
