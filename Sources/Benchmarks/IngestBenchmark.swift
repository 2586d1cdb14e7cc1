import Foundation

/// `iap-ledger-bench ingest`: only the purchase-ingest benchmark of `run` (pgbench single-row
/// INSERT, then wrk POST /v1/purchases, interleaved run by run), in about a minute instead of
/// the whole suite. With several `--serve` binaries, each gets its own database on the same
/// cluster and each run measures them in turn after the same pgbench run: an A/B of two builds
/// in the same go, so drifting machine load hits both alike. With `--reads`, the read benchmark
/// follows on the same services (IngestBenchmark+Reads.swift).
struct IngestBenchmark {
    struct Options {
        var runs = 3
        var seconds = 10
        var purchases = 250_000
        var connections = 32
        var wrkThreads = 2
        var serviceThreads = BenchmarkSuite.Parameters().serviceThreads  // what make bench uses
        var pgbenchScale = 10
        /// `iap-ledger` binaries to measure (default: the one next to this binary).
        var binaries: [String] = []
        /// Seconds to wait after start-up (e.g. to attach a profiler to the printed pids).
        var pause = 0
        /// Then A/B `GET /v1/users/{id}` too, on the users each service ingested.
        var reads = false
        /// Load pg_stat_statements and print each service's statements by PostgreSQL time per
        /// purchase (IngestBenchmark+Statements.swift).
        var statements = false
    }

    /// One service under test: its binary, database, process and position in the bodies file.
    final class Target {
        let binary: String
        let service: ServiceProcess
        let key: String
        let database: String
        var used = 0
        var rates: [Double] = []
        var p99s: [Double] = []
        /// Service + PostgreSQL CPU time per request, µs: steadier than req/s on a shared machine.
        var cpuPerRequest: [Double] = []
        var errors = 0
        /// Purchases answered over every run (what `--statements` divides by).
        var requests = 0

        init(binary: String, service: ServiceProcess, key: String, database: String) {
            self.binary = binary
            self.service = service
            self.key = key
            self.database = database
        }
    }

    static let script = "scripts/bench/post-purchase.lua"

    static func run(_ options: Options) throws {
        let say = BenchmarkSuite.say
        say("starting PostgreSQL (fsync on, synchronous_commit on)")
        let cluster = try BenchCluster(settings: options.statements ? Self.statementSettings : [:])
        defer { cluster.stop() }
        try cluster.initializePgbench(scale: options.pgbenchScale)
        let work = cluster.directory + "/bench"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let suite = BenchmarkSuite(parameters: BenchmarkSuite.Parameters())
        let configPath = try suite.writeConfiguration(in: work)

        let binaries = options.binaries.isEmpty ? [BenchmarkSuite.binaryDirectory + "/iap-ledger"] : options.binaries
        var targets: [Target] = []
        defer { for target in targets { target.service.stop() } }
        for (index, serve) in binaries.enumerated() {
            // `BINARY@THREADS` runs that binary with its own --threads (an A/B of thread counts).
            let parts = serve.split(separator: "@", maxSplits: 1).map(String.init)
            let binary = parts[0]
            let threads = parts.count == 2 ? Int(parts[1]) ?? options.serviceThreads : options.serviceThreads
            let database = index == 0 ? "iap_ledger" : "iap_ledger_\(index + 1)"
            try cluster.server.createDatabase(database)
            let databaseURL = cluster.server.connectionString(database: database)
            let service = try ServiceProcess(
                binary: binary, configPath: configPath, databaseURL: databaseURL, threads: threads,
                logPath: work + "/serve-\(index + 1).log")
            let keyOutput = try Shell.check(
                [binary, "keys", "create", "--name", "bench", "--scopes", "read,write"],
                environment: ["DATABASE_URL": databaseURL])
            guard let key = keyOutput.split(separator: "\n").last.map(String.init), key.hasPrefix("iap_") else {
                throw Shell.Failure(description: "no key in: \(keyOutput)")
            }
            say("[\(index + 1)] \(binary): pid \(service.pid) at \(service.url), database \(database)")
            targets.append(Target(binary: serve, service: service, key: key, database: database))
        }
        say("PGHOST=\(cluster.server.socketDirectory)")

        say("minting \(options.purchases) signed purchases")
        let bodies = work + "/purchases.jsonl"
        try PurchaseMinting.write(count: options.purchases, to: bodies)
        if options.statements { try resetStatements(cluster: cluster, databases: targets.map(\.database)) }
        if options.pause > 0 {
            say("pausing \(options.pause) s")
            sleep(UInt32(options.pause))
        }

        let insert = [
            "pgbench", "-n", "-M", "prepared", "-f", "scripts/bench/insert.sql", "-c", String(options.connections),
            "-j", String(options.wrkThreads), "-T", String(options.seconds),
        ]
        var baseline: [Double] = []
        for run in 1...options.runs {
            baseline.append(try ToolOutput.pgbench(try Shell.check(insert + cluster.clientFlags + ["pgbench"])).tps)
            var line = "run \(run)/\(options.runs): pgbench \(Int(baseline.last!)) tps"
            for (index, target) in targets.enumerated() {
                let cpuBefore =
                    Self.cpuSeconds(of: [target.service.pid])
                    + Self.cpuSeconds(ofChildrenOf: cluster.server.postmasterPID)
                let wrk = try ToolOutput.wrk(
                    try Shell.check(
                        [
                            "wrk", "-t\(options.wrkThreads)", "-c\(options.connections)", "-d\(options.seconds)s",
                            "--latency",
                            "-s", script, target.service.url, "--", bodies, target.key, String(options.wrkThreads),
                            String(target.used),
                        ]))
                let cpu =
                    Self.cpuSeconds(of: [target.service.pid])
                    + Self.cpuSeconds(ofChildrenOf: cluster.server.postmasterPID) - cpuBefore
                target.cpuPerRequest.append(cpu * 1e6 / Double(max(wrk.requests, 1)))
                target.rates.append(wrk.requestsPerSecond)
                target.p99s.append(wrk.p99Milliseconds ?? .nan)
                target.used += wrk.requests + 64 * options.connections  // in flight at the end were sent too
                target.errors += wrk.errors
                target.requests += wrk.requests
                line += String(
                    format: "; [%d] %.0f req/s p99 %.1f ms %.0f µs CPU/req errors %d", index + 1,
                    wrk.requestsPerSecond, wrk.p99Milliseconds ?? .nan, target.cpuPerRequest.last!, wrk.errors)
            }
            say(line)
        }
        print(
            String(
                format: "pgbench INSERT: median %.0f tps (runs %@)", baseline.median!,
                baseline.map { String(format: "%.0f", $0) }.joined(separator: ", ")))
        for (index, target) in targets.enumerated() {
            let duplicates = target.used > options.purchases ? " (bodies ran out: some posts were duplicates)" : ""
            print(
                String(
                    format:
                        "[%d] %@: median %.0f req/s (runs %@), p99 median %.1f ms, ratio %.3f×, service+PostgreSQL CPU %.0f µs/req (runs %@), errors %d%@",
                    index + 1, target.binary, target.rates.median!,
                    target.rates.map { String(format: "%.0f", $0) }.joined(separator: ", "),
                    target.p99s.median ?? .nan, target.rates.median! / baseline.median!,
                    target.cpuPerRequest.median!,
                    target.cpuPerRequest.map { String(format: "%.0f", $0) }.joined(separator: ", "),
                    target.errors, duplicates))
        }
        if options.statements {
            try printStatements(cluster: cluster, databases: targets.map { ($0.database, $0.requests) })
        }
        if options.reads { try reads(options, cluster: cluster, targets: targets, work: work) }
    }

    /// User + system CPU seconds of the given processes (all their threads), from /proc.
    static func cpuSeconds(of pids: [Int32], reapedChildren: Bool = false) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        for pid in pids {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // Fields after "pid (comm) ": state is field 3, utime 14, stime 15, cutime 16, cstime 17.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 14, let user = Double(fields[11]), let system = Double(fields[12]),
                let childUser = Double(fields[13]), let childSystem = Double(fields[14])
            {
                total += (user + system + (reapedChildren ? childUser + childSystem : 0)) / ticks
            }
        }
        return total
    }

    /// CPU seconds of `parent`, its live children (a PostgreSQL cluster: postmaster, backends,
    /// background workers) and the children it has reaped. Without the reaped ones, backends
    /// that exit between two samples (pgbench's, just before the first target's run) took their
    /// time out of the second sum: the first target's figure came out too low, even negative.
    static func cpuSeconds(ofChildrenOf parent: Int32) -> Double {
        let children = (try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)) ?? ""
        return cpuSeconds(of: [parent], reapedChildren: true)
            + cpuSeconds(of: children.split(separator: " ").compactMap { Int32($0) })
    }
}
