import Foundation
import HTTP
import JSON
import Synchronization
import TestSupport

/// `iap-ledger-bench webhooks` (and the `webhooks` group of `run`): what one webhook endpoint
/// costs the purchase-ingest path, and how far behind its deliveries run.
///
/// Two `iap-ledger serve` processes, each on its own database of the same cluster, with the
/// same config except that one has one webhook endpoint: a receiver in this process answering
/// 204 to every POST. Runs alternate between them (the same bodies, the same wrk load); for the
/// one with the endpoint a run lasts until every change it recorded was delivered, so the
/// delivery work is inside its CPU figure. CPU per purchase is service + PostgreSQL CPU time.
/// Lag is the receiver's arrival time minus the change's `recordedAt` (the write's instant).
struct WebhookBenchmark {
    struct Options {
        var runs = 3
        var seconds = 10
        /// Enough for three runs of 10 s at ~4,000 purchases/s: a run past the end of the file
        /// posts purchases already recorded again, which cost next to nothing (idempotent).
        var purchases = 150_000
        var connections = 32
        var wrkThreads = 2
        var serviceThreads = BenchmarkSuite.Parameters().serviceThreads
        /// `iap-ledger-bench webhooks --statements`: PostgreSQL's time per purchase by statement
        /// for each service (pg_stat_statements, as `ingest --statements`).
        var statements = false
        /// `--serve BINARY` (repeatable): the services with the endpoint, each on its own database
        /// and receiver, measured in turn in every run against the one without (A/B); by default
        /// the release build's.
        var binaries: [String] = []
    }

    struct Result {
        var withoutCPU: [Double] = []
        var withoutRates: [Double] = []
        /// Per service with the endpoint (one unless `--serve` named several), each run's figure.
        var withCPUByService: [[Double]] = []
        var withRatesByService: [[Double]] = []
        var withCPU: [Double] { withCPUByService.first ?? [] }
        var withRates: [Double] { withRatesByService.first ?? [] }
        /// Milliseconds per delivery, every delivery of every run, per service with the endpoint.
        var lagsByService: [[Double]] = []
        /// The first service's.
        var lags: [Double] { lagsByService.first ?? [] }
        var recorded = 0
        var delivered = 0
        var drainSeconds: [Double] = []
    }

    /// Counts deliveries and their lag (on the receiver's worker threads).
    final class Receiver: Sendable {
        private let state = Mutex<(count: Int, lags: [Double], ids: Set<String>)>((0, [], []))
        var count: Int { state.withLock { $0.ids.count } }
        var lags: [Double] { state.withLock { $0.lags } }

        func received(_ body: [UInt8]) {
            let now = Double(Date().timeIntervalSince1970 * 1000)
            guard let change = try? JSONValue.parse(body), let id = change["id"]?.stringValue,
                let recorded = change["recordedAt"]?.stringValue.flatMap(RFC3339.parse)
            else { return }
            state.withLock { state in
                if state.ids.insert(id).inserted { state.lags.append(now - Double(recorded)) }
            }
        }
    }

    static let script = "scripts/bench/post-purchase.lua"

    static func run(_ options: Options, cluster: BenchCluster, work: String, bodies: String) throws -> Result {
        let say = BenchmarkSuite.say
        let binaries = options.binaries.isEmpty ? [BenchmarkSuite.binaryDirectory + "/iap-ledger"] : options.binaries
        // One receiver per service: change ids restart at 1 in each database.
        let receivers = binaries.map { _ in Receiver() }
        var router = Router()
        for (index, receiver) in receivers.enumerated() {
            router.add("POST", "/hook\(index)") { request, _ in
                receiver.received(request.body)
                return HTTPResponse(status: 204)
            }
        }
        let handler = router
        var configuration = HTTPServer.Configuration()
        configuration.threadCount = 8
        let server = HTTPServer(configuration: configuration) { handler.handle($0) }
        let port = try server.start()
        defer { server.stop() }

        let suite = BenchmarkSuite(parameters: BenchmarkSuite.Parameters())
        let plain = try suite.writeConfiguration(in: work)
        let secret = "whsec_" + Data((0..<32).map { UInt8($0 * 7 % 251) }).base64EncodedString()
        var services = [
            (name: "iap_ledger_nohook", config: plain, binary: BenchmarkSuite.binaryDirectory + "/iap-ledger")
        ]
        for (index, binary) in binaries.enumerated() {
            let hooked = work + "/bench-config-webhook\(index == 0 ? "" : "-\(index + 1)").json"
            var config = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: plain))))
            if case .object(var members) = config {
                members["webhooks"] = .array([
                    .object([
                        "name": .string("bench"), "url": .string("http://127.0.0.1:\(port)/hook\(index)"),
                        "secret": .string(secret),
                    ])
                ])
                config = .object(members)
            }
            try Data(config.serialized()).write(to: URL(fileURLWithPath: hooked))
            services.append(("iap_ledger_hook" + (index == 0 ? "" : "_\(index + 1)"), hooked, binary))
        }

        var targets: [(service: ServiceProcess, key: String, database: String)] = []
        defer { for target in targets { target.service.stop() } }
        for (name, configPath, binary) in services {
            try cluster.server.createDatabase(name)
            let databaseURL = cluster.server.connectionString(database: name)
            let service = try ServiceProcess(
                binary: binary, configPath: configPath, databaseURL: databaseURL, threads: options.serviceThreads,
                logPath: work + "/serve-\(name).log")
            let keyOutput = try Shell.check(
                [binary, "keys", "create", "--name", "bench", "--scopes", "read,write"],
                environment: ["DATABASE_URL": databaseURL])
            guard let key = keyOutput.split(separator: "\n").last.map(String.init), key.hasPrefix("iap_") else {
                throw Shell.Failure(description: "no key in: \(keyOutput)")
            }
            targets.append((service, key, name))
        }
        if options.statements {
            try IngestBenchmark.resetStatements(cluster: cluster, databases: targets.map(\.database))
        }
        var purchases = targets.map { _ in 0 }

        var result = Result()
        result.withCPUByService = binaries.map { _ in [] }
        result.withRatesByService = binaries.map { _ in [] }
        var used = targets.map { _ in 0 }
        for run in 1...options.runs {
            for (index, target) in targets.enumerated() {
                let pids = { [target.service.pid] }
                let serviceBefore = IngestBenchmark.cpuSeconds(of: pids())
                let cpuBefore = serviceBefore + IngestBenchmark.cpuSeconds(ofChildrenOf: cluster.server.postmasterPID)
                let wrk = try ToolOutput.wrk(
                    try Shell.check([
                        "wrk", "-t\(options.wrkThreads)", "-c\(options.connections)", "-d\(options.seconds)s",
                        "--latency",
                        "-s", script, target.service.url, "--", bodies, target.key, String(options.wrkThreads),
                        String(used[index]),
                    ]))
                used[index] += wrk.requests + 64 * options.connections
                purchases[index] += wrk.requests
                var delivered = ""
                if index > 0 {
                    // Until everything recorded so far has been delivered (the dispatcher's work counts).
                    let receiver = receivers[index - 1]
                    let drainStart = Date()
                    let recorded = try count("SELECT count(*) FROM changes.feed", cluster, target.database)
                    while receiver.count < recorded && Date().timeIntervalSince(drainStart) < 120 { usleep(20_000) }
                    let drain = Date().timeIntervalSince(drainStart)
                    delivered = String(
                        format: ", delivered %d/%d, drained %.1f s after wrk", receiver.count, recorded, drain)
                    if index == 1 {
                        result.drainSeconds.append(drain)
                        result.recorded = recorded
                        result.delivered = receiver.count
                    }
                }
                let serviceCPU = IngestBenchmark.cpuSeconds(of: pids()) - serviceBefore
                let cpu =
                    IngestBenchmark.cpuSeconds(of: pids())
                    + IngestBenchmark.cpuSeconds(ofChildrenOf: cluster.server.postmasterPID) - cpuBefore
                let perRequest = cpu * 1e6 / Double(max(wrk.requests, 1))
                let servicePerRequest = serviceCPU * 1e6 / Double(max(wrk.requests, 1))
                if index == 0 {
                    result.withoutCPU.append(perRequest)
                    result.withoutRates.append(wrk.requestsPerSecond)
                } else {
                    result.withCPUByService[index - 1].append(perRequest)
                    result.withRatesByService[index - 1].append(wrk.requestsPerSecond)
                }
                let label =
                    index == 0
                    ? "no endpoint" : binaries.count == 1 ? "one endpoint" : "one endpoint, \(binaries[index - 1])"
                say(
                    String(
                        format:
                            "webhooks run %d/%d [%@]: %.0f req/s, %.0f µs CPU/purchase (service %.0f, PostgreSQL %.0f)%@",
                        run, options.runs, label, wrk.requestsPerSecond, perRequest, servicePerRequest,
                        perRequest - servicePerRequest, delivered))
            }
        }
        result.lagsByService = receivers.map(\.lags)
        if options.statements {
            // The dispatcher's statements rank below the ingest's: 40 lines reach them.
            try IngestBenchmark.printStatements(
                cluster: cluster, databases: zip(targets, purchases).map { ($0.database, $1) }, top: 40)
        }
        return result
    }

    static func count(_ sql: String, _ cluster: BenchCluster, _ database: String) throws -> Int {
        Int(try cluster.query(sql, database: database)[0, 0] ?? "0") ?? 0
    }

    /// The p-th percentile (0…100) of `values`.
    static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[max(0, min(sorted.count - 1, rank))]
    }
}

extension WebhookBenchmark {
    /// `iap-ledger-bench webhooks`: this benchmark alone, on a cluster of its own.
    static func runAlone(_ options: Options) throws {
        let cluster = try BenchCluster(settings: options.statements ? IngestBenchmark.statementSettings : [:])
        defer { cluster.stop() }
        let work = cluster.directory + "/bench"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let bodies = work + "/purchases.jsonl"
        try PurchaseMinting.write(count: options.purchases, to: bodies)
        let result = try run(options, cluster: cluster, work: work, bodies: bodies)
        print(
            String(
                format:
                    "CPU per purchase: %.0f µs with one endpoint, %.0f µs without (%.2f×); lag p50 %.0f ms p99 %.0f ms; delivered %d of %d",
                result.withCPU.median!, result.withoutCPU.median!, result.withCPU.median! / result.withoutCPU.median!,
                percentile(result.lags, 50) ?? .nan, percentile(result.lags, 99) ?? .nan, result.delivered,
                result.recorded))
        guard options.binaries.count > 1 else { return }
        for (index, binary) in options.binaries.enumerated() {
            let runs = result.withCPUByService[index]
            let lags = result.lagsByService[index]
            print(
                String(
                    format:
                        "  %@: %.0f µs with the endpoint (runs %@), %.2f× the service without; lag p50 %.0f ms p99 %.0f ms",
                    binary, runs.median!, runs.map { String(format: "%.0f", $0) }.joined(separator: ", "),
                    runs.median! / result.withoutCPU.median!, percentile(lags, 50) ?? .nan,
                    percentile(lags, 99) ?? .nan))
        }
    }
}

extension BenchmarkSuite {
    mutating func webhookBenchmark(cluster: BenchCluster, work: String, bodies: String) throws {
        let p = parameters
        var options = WebhookBenchmark.Options()
        options.runs = p.runs
        options.seconds = p.seconds
        options.purchases = p.purchases
        options.connections = p.ingestConnections
        options.wrkThreads = p.wrkThreads
        options.serviceThreads = p.serviceThreads
        let result = try WebhookBenchmark.run(options, cluster: cluster, work: work, bodies: bodies)
        let ratio = result.withCPU.median! / result.withoutCPU.median!
        let command = "iap-ledger-bench webhooks --runs \(p.runs) --seconds \(p.seconds)"
        rows.append(
            BenchmarkRow(
                name: "Ingest CPU per purchase with one webhook endpoint (delivered to a local receiver)",
                figure: String(
                    format: "%.0f µs (%@ req/s)", result.withCPU.median!,
                    BenchmarkReport.number(result.withRates.median!)),
                runs: result.withCPU,
                baseline: String(
                    format: "%.0f µs without an endpoint (%@ req/s)", result.withoutCPU.median!,
                    BenchmarkReport.number(result.withoutRates.median!)),
                baselineRuns: result.withoutCPU, ratio: String(format: "%.2f×", ratio), aim: "≤ 1.10× (#13)",
                met: ratio <= 1.10, command: command,
                baselineCommand: "the same, the service's config without `webhooks`"))
        let p99 = WebhookBenchmark.percentile(result.lags, 99) ?? .nan
        rows.append(
            BenchmarkRow(
                name: "Webhook delivery lag at the ingest rate, p99 (write → receiver)",
                figure: String(
                    format: "%.0f ms (p50 %.0f ms; %d of %d delivered)", p99,
                    WebhookBenchmark.percentile(result.lags, 50) ?? .nan, result.delivered, result.recorded),
                runs: result.drainSeconds, baseline: "aim 1,000 ms", baselineRuns: [],
                ratio: String(format: "%.2f× aim", p99 / 1000), aim: "≤ 1 s, all delivered (#13)",
                met: p99 <= 1000 && result.delivered >= result.recorded, command: command, baselineCommand: ""))
        notes.append(
            "webhooks: runs of the endpoint's service last until every change is delivered; drain after wrk per run \(result.drainSeconds.map { String(format: "%.1f s", $0) }.joined(separator: " / ")) (the row's runs column)."
        )
    }
}
