import Foundation

/// The cluster rows of BENCHMARKS.md (issue 16): HAProxy with three instances next to one
/// instance of the same deployment addressed directly, and the replica's replay lag meanwhile.
extension BenchmarkSuite {
    mutating func clusterBenchmark(configPath: String, bodies: String) throws {
        let p = parameters
        var options = ClusterBenchmark.Options()
        options.runs = p.runs
        options.seconds = p.seconds
        options.ingestConnections = p.ingestConnections
        options.readConnections = p.readConnections
        options.readUsers = p.readUsers
        options.wrkThreads = p.wrkThreads
        let result = try ClusterBenchmark.run(
            options, configPath: configPath, binary: Self.binaryDirectory + "/iap-ledger", bodies: bodies)
        let command = "deploy/local-cluster up --binary .build/release/iap-ledger; iap-ledger-bench cluster"
        for (label, paths, unit) in [
            ("ingest POST /v1/purchases, \(p.ingestConnections) conns", result.ingest, "req/s"),
            ("read GET /v1/users/{id}, \(p.readConnections) conns", result.read, "req/s"),
        ] {
            let (through, direct) = (paths[0], paths[1])
            rows.append(
                BenchmarkRow(
                    name:
                        "Cluster \(label): through HAProxy to 3 instances (PgBouncer transaction pooling, streaming replica)",
                    figure:
                        "\(BenchmarkReport.number(through.rates.median!)) \(unit) (p99 \(String(format: "%.1f", through.p99s.median ?? .nan)) ms)",
                    runs: through.rates,
                    baseline:
                        "\(BenchmarkReport.number(direct.rates.median!)) \(unit) to node1 directly (p99 \(String(format: "%.1f", direct.p99s.median ?? .nan)) ms)",
                    baselineRuns: direct.rates,
                    ratio: String(format: "%.2f×", through.rates.median! / direct.rates.median!),
                    aim: "none: on 2 shared cores this is the hop's overhead, not a gain (#16)", met: nil,
                    command: command, baselineCommand: "wrk … http://127.0.0.1:$NODE1_PORT (the same deployment)"))
            notes.append(
                String(
                    format:
                        "cluster %@: CPU of the whole path (3 instances, HAProxy, PgBouncer, primary) %.0f µs per request through HAProxy, %.0f µs to node1 directly; errors %d / %d.",
                    label, through.cpuPerRequest.median ?? .nan, direct.cpuPerRequest.median ?? .nan, through.errors,
                    direct.errors))
        }
        let lagBytes = result.lagBytes.sorted()
        let lagMs = result.lagMilliseconds.sorted()
        let p99Bytes = WebhookBenchmark.percentile(lagBytes, 99) ?? .nan
        let p99Ms = WebhookBenchmark.percentile(lagMs, 99) ?? .nan
        rows.append(
            BenchmarkRow(
                name: "Replica replay lag during the cluster ingest runs (pg_stat_replication, every 200 ms)",
                figure: String(format: "p99 %.0f ms, %@ bytes behind", p99Ms, BenchmarkReport.number(p99Bytes)),
                runs: [],
                baseline: String(
                    format: "max %.0f ms, %@ bytes; %d samples", lagMs.last ?? .nan,
                    BenchmarkReport.number(lagBytes.last ?? .nan), lagBytes.count),
                baselineRuns: [], ratio: "—", aim: "reported (#16)", met: nil,
                command:
                    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), replay_lag FROM pg_stat_replication",
                baselineCommand: ""))
        notes.append(
            String(
                format: "cluster: the replica spent %.0f µs CPU per purchase replaying it.",
                result.replicaCPUPerWrite.median ?? .nan))
    }
}
