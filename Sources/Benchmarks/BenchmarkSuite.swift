import EventStore
import Foundation
import Infrastructure
import Ledger
import Service
import TestSupport

/// `iap-ledger-bench run`: every benchmark with fixed parameters, each next to its baseline run
/// in the same go (interleaved run by run so drifting machine load hits both alike).
struct BenchmarkSuite {
    struct Parameters {
        var runs = 3
        var seconds = 10
        var verifyCount = 30_000
        var foldEvents = 1_000_000
        /// Enough distinct bodies for the ingest runs and the cluster group's six ingest runs
        /// (which use a database of their own, so they may post the same bodies again).
        var purchases = 250_000
        var readConnections = 64
        /// The read benchmark's working set: this many of the users the ingest runs created
        /// (~19 MB of documents: inside the service's default 32 MB document cache).
        var readUsers = 25_000
        var ingestConnections = 32
        var wrkThreads = 2
        var serviceThreads = 32
        var pgbenchScale = 10
        var output = "BENCHMARKS.md"
        /// Which groups run: "cpu" (verify, fold), "longpoll" (idle waiters' RSS), "http" (ingest,
        /// then read on what it wrote, then long polls on the service), "webhooks" (ingest with and
        /// without an endpoint, delivery lag), "replay", "logmigration" (`migrate`'s one-time log
        /// migration on a log from before subjects), "cluster" (deploy/local-cluster: HAProxy
        /// and three instances vs one). The focused groups "ingest" and "read" are the two halves
        /// of "http" alone (`--only read` first ingests the users it reads, unmeasured).
        var groups: Set<String> = ["cpu", "longpoll", "http", "webhooks", "replay", "logmigration", "cluster"]
        var longPollWaiters = 1_000
        static let knownGroups: Set<String> = [
            "cpu", "longpoll", "http", "ingest", "read", "webhooks", "replay", "logmigration", "cluster",
        ]
    }

    var parameters: Parameters
    var rows: [BenchmarkRow] = []
    var notes: [String] = []

    init(parameters: Parameters) {
        self.parameters = parameters
    }

    static func say(_ text: String) {
        FileHandle.standardError.write(Data("[bench] \(text)\n".utf8))
    }

    /// The directory holding this binary (and `iap-ledger`, built by the same `swift build`).
    static var binaryDirectory: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    // MARK: CPU-only benchmarks

    mutating func cpuBenchmarks() throws {
        let p = parameters
        var ours: [Double] = []
        var openssl: [Double] = []
        let opensslCommand = ["openssl", "speed", "-seconds", "3", "ecdsap256"]
        for run in 1...p.runs {
            Self.say("verify run \(run)/\(p.runs)")
            openssl.append(try ToolOutput.opensslVerifyPerSecond(try Shell.check(opensslCommand)))
            ours.append(AppStoreBenchmark.verifyPerCPUSecond(count: p.verifyCount))
        }
        let verifyRatio = ours.median! / openssl.median!
        rows.append(
            BenchmarkRow(
                name: "JWS verification, warm chain cache, 1 core",
                figure: "\(BenchmarkReport.number(ours.median!)) verify per CPU-second", runs: ours,
                baseline: "\(BenchmarkReport.number(openssl.median!)) verify per CPU-second (openssl ecdsap256)",
                baselineRuns: openssl,
                ratio: String(format: "%.2f×", verifyRatio), aim: "≥ 0.8×", met: verifyRatio >= 0.8,
                command: ".build/release/iap-ledger-bench verify-cpu --count \(p.verifyCount)",
                baselineCommand: Shell.display(opensslCommand)))

        var folds: [Double] = []
        for run in 1...p.runs {
            Self.say("fold run \(run)/\(p.runs)")
            folds.append(LedgerBenchmark.foldThroughput(events: p.foldEvents))
        }
        rows.append(
            BenchmarkRow(
                name: "Ledger fold of \(BenchmarkReport.number(Double(p.foldEvents))) events in memory, 1 core",
                figure: "\(BenchmarkReport.number(folds.median!)) events/s", runs: folds,
                baseline: "aim 2,000,000 events/s", baselineRuns: [],
                ratio: String(format: "%.2f× aim", folds.median! / 2_000_000), aim: "≥ 2M/s",
                met: folds.median! >= 2_000_000,
                command: ".build/release/iap-ledger-bench fold --events \(p.foldEvents)", baselineCommand: ""))
    }

    // MARK: Long-poll waiters

    /// One measurement, not a median: a second one in the same process would reuse what the
    /// first freed and add less.
    // MARK: HTTP against PostgreSQL

    mutating func ingestBenchmark(cluster: BenchCluster, service: ServiceProcess, key: String, bodies: String) throws {
        let p = parameters
        let script = "scripts/bench/post-purchase.lua"
        let insert = [
            "pgbench", "-n", "-M", "prepared", "-f", "scripts/bench/insert.sql", "-c", String(p.ingestConnections),
            "-j", String(p.wrkThreads), "-T", String(p.seconds),
        ]
        var ours: [Double] = []
        var p99s: [Double] = []
        var baseline: [Double] = []
        var used = 0
        var errors = 0
        var cpuPerPurchase: [(total: Double, service: Double)] = []
        ToolOutput.resetPeakRSS(pid: service.pid)
        for run in 1...p.runs {
            Self.say("ingest run \(run)/\(p.runs): pgbench INSERT, then wrk POST")
            baseline.append(try ToolOutput.pgbench(try Shell.check(insert + cluster.clientFlags + ["pgbench"])).tps)
            let serviceBefore = IngestBenchmark.cpuSeconds(of: [service.pid])
            let clusterBefore = IngestBenchmark.cpuSeconds(ofChildrenOf: cluster.server.postmasterPID)
            let wrk = try ToolOutput.wrk(
                try Shell.check(
                    [
                        "wrk", "-t\(p.wrkThreads)", "-c\(p.ingestConnections)", "-d\(p.seconds)s", "--latency", "-s",
                        script,
                        service.url, "--", bodies, key, String(p.wrkThreads), String(used),
                    ]))
            // The figure issue 39 chases: CPU per purchase, service and PostgreSQL (from /proc/PID/stat).
            let serviceCPU = IngestBenchmark.cpuSeconds(of: [service.pid]) - serviceBefore
            let clusterCPU = IngestBenchmark.cpuSeconds(ofChildrenOf: cluster.server.postmasterPID) - clusterBefore
            cpuPerPurchase.append(
                (
                    (serviceCPU + clusterCPU) * 1e6 / Double(max(wrk.requests, 1)),
                    serviceCPU * 1e6 / Double(max(wrk.requests, 1))
                ))
            ours.append(wrk.requestsPerSecond)
            p99s.append(wrk.p99Milliseconds ?? .nan)
            used += wrk.requests + 64 * p.ingestConnections  // in flight at the end were sent too
            errors += wrk.errors
            Self.say(
                "  pgbench \(Int(baseline.last!)) tps; wrk \(Int(wrk.requestsPerSecond)) req/s, errors \(wrk.errors)")
        }
        let rss = ToolOutput.peakRSSMegabytes(pid: service.pid)
        let recorded =
            (try? cluster.query("SELECT count(*) FROM proj.users")[0, 0]).flatMap { $0 }.flatMap { Int($0) } ?? -1
        if used > p.purchases {
            notes.append(
                "ingest used more bodies (\(used)) than were minted (\(p.purchases)): some posts were duplicates")
        }
        notes.append(
            "ingest: \(recorded) purchases recorded (one user each), \(errors) non-2xx/socket errors; p99 per run \(p99s.map { String(format: "%.1f ms", $0) }.joined(separator: " / "))."
        )
        notes.append(
            "ingest: CPU per purchase (service + PostgreSQL, /proc/PID/stat) per run \(cpuPerPurchase.map { String(format: "%.0f µs (service %.0f)", $0.total, $0.service) }.joined(separator: " / "))."
        )
        notes.append("ingest: group commit (iap_ingest_batch_size) \(Self.batchSizes(of: service, key: key)).")
        let ratio = ours.median! / baseline.median!
        rows.append(
            BenchmarkRow(
                name: "Verified purchase ingest, \(p.ingestConnections) conns, durable commit",
                figure:
                    "\(BenchmarkReport.number(ours.median!)) req/s (p99 \(String(format: "%.1f", p99s.median ?? .nan)) ms)",
                runs: ours,
                baseline: "\(BenchmarkReport.number(baseline.median!)) tps (pgbench 1-row INSERT)",
                baselineRuns: baseline,
                ratio: String(format: "%.2f×", ratio), aim: "≥ 0.3× and p99 ≤ 50 ms (#17; stretch 0.5×)",
                met: ratio >= 0.3 && (p99s.median ?? .infinity) <= 50,
                command:
                    "iap-ledger-bench mint-purchases --count \(p.purchases) --out purchases.jsonl; wrk -t\(p.wrkThreads) -c\(p.ingestConnections) -d\(p.seconds)s --latency -s \(script) http://127.0.0.1:$PORT -- purchases.jsonl $KEY \(p.wrkThreads) 0",
                baselineCommand: Shell.display(insert) + " -h $PGHOST -U postgres pgbench"))
        if let rss {
            rows.append(
                BenchmarkRow(
                    name: "Peak RSS of iap-ledger serve under the ingest load", figure: String(format: "%.1f MB", rss),
                    runs: [rss],
                    baseline: "aim 100 MB", baselineRuns: [], ratio: String(format: "%.2f× aim", rss / 100),
                    aim: "≤ 100 MB",
                    met: rss <= 100, command: "grep VmHWM /proc/$(pgrep -f 'iap-ledger serve')/status",
                    baselineCommand: ""))
        }
    }

    mutating func readBenchmark(cluster: BenchCluster, service: ServiceProcess, key: String, work: String) throws {
        let p = parameters
        let users = try cluster.query("SELECT user_id FROM proj.users ORDER BY user_id LIMIT \(p.readUsers)")
        guard users.count > 0 else {
            throw Shell.Failure(description: "no users were ingested; see \(service.logPath)")
        }
        let usersFile = work + "/users.txt"
        try ((0..<users.count).compactMap { users[$0, 0] }.joined(separator: "\n") + "\n")
            .write(toFile: usersFile, atomically: true, encoding: .utf8)
        let script = "scripts/bench/get-user.lua"
        let wrkCommand = [
            "wrk", "-t\(p.wrkThreads)", "-c\(p.readConnections)", "-d\(p.seconds)s", "--latency", "-s", script,
        ]
        let select = [
            "pgbench", "-S", "-n", "-M", "prepared", "-c", String(p.readConnections), "-j", String(p.wrkThreads),
            "-T", String(p.seconds),
        ]
        Self.say("read warm-up (3 s)")
        _ = try Shell.check([
            "wrk", "-t\(p.wrkThreads)", "-c\(p.readConnections)", "-d3s", "-s", script, service.url, "--", usersFile,
            key,
        ])
        ToolOutput.resetPeakRSS(pid: service.pid)
        var ours: [Double] = []
        var p99s: [Double] = []
        var baseline: [Double] = []
        var errors = 0
        for run in 1...p.runs {
            Self.say("read run \(run)/\(p.runs): pgbench -S, then wrk GET")
            baseline.append(try ToolOutput.pgbench(try Shell.check(select + cluster.clientFlags + ["pgbench"])).tps)
            let wrk = try ToolOutput.wrk(try Shell.check(wrkCommand + [service.url, "--", usersFile, key]))
            ours.append(wrk.requestsPerSecond)
            p99s.append(wrk.p99Milliseconds ?? .nan)
            errors += wrk.errors
            Self.say(
                "  pgbench \(Int(baseline.last!)) tps; wrk \(Int(wrk.requestsPerSecond)) req/s, p99 \(wrk.p99Milliseconds ?? .nan) ms, errors \(wrk.errors)"
            )
        }
        let rss = ToolOutput.peakRSSMegabytes(pid: service.pid)
        notes.append(
            "read: document cache \(Self.cacheReads(of: service, key: key)) over the whole read phase (warm-up included)."
        )
        notes.append(
            "read: \(users.count) seeded users (ingested through the API above), \(errors) non-2xx/socket errors; p99 per run \(p99s.map { String(format: "%.2f ms", $0) }.joined(separator: " / "))."
        )
        let ratio = ours.median! / baseline.median!
        let p99 = p99s.median ?? .nan
        rows.append(
            BenchmarkRow(
                name: "GET /v1/users/{id}, \(p.readConnections) keep-alive conns",
                figure: "\(BenchmarkReport.number(ours.median!)) req/s (p99 \(String(format: "%.2f", p99)) ms)",
                runs: ours,
                baseline: "\(BenchmarkReport.number(baseline.median!)) tps (pgbench -S -M prepared)",
                baselineRuns: baseline,
                ratio: String(format: "%.2f×", ratio), aim: "≥ 1.0× and p99 ≤ 5 ms (#7, #17)",
                met: ratio >= 1.0 && p99 <= 5,
                command: Shell.display(wrkCommand) + " http://127.0.0.1:$PORT -- users.txt $KEY",
                baselineCommand: Shell.display(select) + " -h $PGHOST -U postgres pgbench"))
        if let rss {
            rows.append(
                BenchmarkRow(
                    name: "Peak RSS of iap-ledger serve under the read load", figure: String(format: "%.1f MB", rss),
                    runs: [rss],
                    baseline: "aim 100 MB", baselineRuns: [], ratio: String(format: "%.2f× aim", rss / 100),
                    aim: "≤ 100 MB",
                    met: rss <= 100, command: "grep VmHWM /proc/$(pgrep -f 'iap-ledger serve')/status",
                    baselineCommand: ""))
        }
    }
}
