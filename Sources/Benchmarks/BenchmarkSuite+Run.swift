import Foundation
import TestSupport

/// The order of a go: what the groups asked for need (a service, pgbench's tables, minted
/// bodies) is set up once, then each group runs next to its baselines. A focused run
/// (`--only webhooks`, `ingest`, `read`, `replay`, `logmigration`) sets up only what its group needs, so a step
/// of a performance change can be measured in a few minutes with the same interleaving.
extension BenchmarkSuite {
    mutating func run() throws {
        let started = Date()
        let p = parameters
        let groups = p.groups
        let ingest = groups.contains("http") || groups.contains("ingest")
        let read = groups.contains("http") || groups.contains("read")
        let needsService = ingest || read
        let needsBodies = needsService || groups.contains("webhooks") || groups.contains("cluster")
        if groups.contains("cpu") { try cpuBenchmarks() }
        if groups.contains("longpoll") { try longPollBenchmark() }

        Self.say("starting PostgreSQL (fsync on, synchronous_commit on)")
        let cluster = try BenchCluster()
        defer { cluster.stop() }
        let work = cluster.directory + "/bench"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let configPath = try writeConfiguration(in: work)

        var service: ServiceProcess?
        defer { service?.stop() }
        var key = ""
        if needsService {
            Self.say("pgbench -i -s \(p.pgbenchScale)")
            try cluster.initializePgbench(scale: p.pgbenchScale)
            let serveBinary = Self.binaryDirectory + "/iap-ledger"
            let databaseURL = cluster.serviceConninfo
            // Migrations run at start; the key needs the auth schema, so start first, then create the key.
            let started = try ServiceProcess(
                binary: serveBinary, configPath: configPath, databaseURL: databaseURL, threads: p.serviceThreads,
                logPath: work + "/serve.log")
            service = started
            let keyOutput = try Shell.check(
                [serveBinary, "keys", "create", "--name", "bench", "--scopes", "read,write"],
                environment: ["DATABASE_URL": databaseURL])
            guard let last = keyOutput.split(separator: "\n").last.map(String.init), last.hasPrefix("iap_") else {
                throw Shell.Failure(description: "no key in: \(keyOutput)")
            }
            key = last
            Self.say("service pid \(started.pid) at \(started.url); PGHOST=\(cluster.server.socketDirectory)")
        }

        let bodies = work + "/purchases.jsonl"
        if needsBodies {
            // `--only read` posts only the users it reads (and some spare for requests in flight).
            let count = groups == ["read"] ? min(p.purchases, p.readUsers * 2) : p.purchases
            Self.say("minting \(count) signed purchases")
            let mintStart = Date()
            try PurchaseMinting.write(count: count, to: bodies)
            Self.say("minted in \(String(format: "%.1f", Date().timeIntervalSince(mintStart))) s")
        }

        if let service {
            if ingest {
                try ingestBenchmark(cluster: cluster, service: service, key: key, bodies: bodies)
            } else {
                try seedReadUsers(cluster: cluster, service: service, key: key, bodies: bodies)
            }
            if read { try readBenchmark(cluster: cluster, service: service, key: key, work: work) }
            if groups.contains("http") { try serviceLongPollBenchmark(service: service, key: key) }
        }
        if groups.contains("webhooks") { try webhookBenchmark(cluster: cluster, work: work, bodies: bodies) }
        if groups.contains("replay") { try replayBenchmark(cluster: cluster) }
        if groups.contains("logmigration") { try logMigrationBenchmark(cluster: cluster) }
        if groups.contains("cluster") { try clusterBenchmark(configPath: configPath, bodies: bodies) }

        let elapsed = Date().timeIntervalSince(started)
        let focused = groups.sorted().joined(separator: ",")
        let by =
            groups == Parameters().groups ? "`make bench`" : "a focused run (`iap-ledger-bench run --only \(focused)`)"
        let context =
            [
                "",
                "Measured \(ISO8601DateFormatter().string(from: Date())) by \(by) (\(Int(elapsed)) s) on \(machine()).",
                "Each figure is the median of \(p.runs) runs; each run of ours is interleaved with a run of its baseline, in the same go, on the same cluster.",
                "The machine is shared (2 vCPU; other builds/tests may run): absolute numbers are noisy, the ratios are what count.",
                "Load generator, service (`iap-ledger serve`, \(p.serviceThreads) threads, separate process) and PostgreSQL (private cluster, fsync on, synchronous_commit on, unix socket) share the same cores.",
            ] + notes.map { "- \($0)" }
        try BenchmarkReport.write(BenchmarkReport.render(rows: rows, context: context), to: p.output)
        Self.say("wrote \(p.output)")
        print(BenchmarkReport.render(rows: rows, context: context))
    }

    /// `--only read` without the ingest runs: the read working set is users created through the
    /// API, so post bodies (unmeasured, 5 s at a time) until there are `readUsers` of them.
    func seedReadUsers(cluster: BenchCluster, service: ServiceProcess, key: String, bodies: String) throws {
        let p = parameters
        var used = 0
        var recorded = 0
        for _ in 1...20 {
            let wrk = try ToolOutput.wrk(
                try Shell.check(
                    [
                        "wrk", "-t\(p.wrkThreads)", "-c\(p.ingestConnections)", "-d5s", "-s",
                        "scripts/bench/post-purchase.lua",
                        service.url, "--", bodies, key, String(p.wrkThreads), String(used),
                    ]))
            used += wrk.requests + 64 * p.ingestConnections
            recorded = Int(try cluster.query("SELECT count(*) FROM proj.users")[0, 0] ?? "0") ?? 0
            Self.say("read: \(recorded) users seeded (unmeasured)")
            if recorded >= p.readUsers || used >= min(p.purchases, p.readUsers * 2) { break }
        }
        guard recorded > 0 else { throw Shell.Failure(description: "no users were ingested; see \(service.logPath)") }
    }
}
