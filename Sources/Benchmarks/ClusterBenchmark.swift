import EventStore
import Foundation
import TestSupport

/// The `cluster` group of `iap-ledger-bench run` (and `iap-ledger-bench cluster`): the local
/// multi-node deployment of `deploy/local-cluster` (PostgreSQL primary with a streaming replica,
/// PgBouncer in transaction pooling, three `serve` instances, HAProxy) measured through HAProxy
/// next to one of its own instances addressed directly, run by run in the same go, on the same
/// database. On 2 shared cores three instances cannot add capacity: the ratio is the cost of the
/// extra hop and processes, not a gain. While the ingest runs, the replica's replay lag is sampled.
struct ClusterBenchmark {
    struct Options {
        var runs = 3
        var seconds = 10
        var ingestConnections = 32
        var readConnections = 64
        var readUsers = 25_000
        var wrkThreads = 2
    }

    /// One way in: HAProxy, or node1 directly.
    struct Path {
        var name: String
        var url: String
        var rates: [Double] = []
        var p99s: [Double] = []
        /// CPU of every process of the deployment (instances, HAProxy, PgBouncer, primary) per request, µs.
        var cpuPerRequest: [Double] = []
        var errors = 0
    }

    struct Result {
        var ingest: [Path]
        var read: [Path]
        /// Replay lag samples on the primary's pg_stat_replication during the ingest runs.
        var lagBytes: [Double]
        var lagMilliseconds: [Double]
        var replicaCPUPerWrite: [Double]
    }

    static let say = BenchmarkSuite.say

    static func run(_ options: Options, configPath: String, binary: String, bodies: String) throws -> Result {
        let directory = try TestDatabase.makeTemporaryDirectory()
        // mkdtemp makes it 0700: as root, local-cluster runs PostgreSQL and PgBouncer as the
        // postgres OS user, which must reach the run and log directories inside.
        chmod(directory, 0o755)
        let cluster = try LocalCluster(directory: directory, binary: binary, configPath: configPath)
        defer { cluster.down() }
        let key = try cluster.createKey()
        say(
            "cluster: HAProxy at \(cluster.haproxyURL), node1 at \(cluster.nodeURL(1)); primary \(cluster.primaryConninfo)"
        )

        var ingest = [
            Path(name: "HAProxy, 3 instances", url: cluster.haproxyURL),
            Path(name: "node1 direct", url: cluster.nodeURL(1)),
        ]
        var used = 0
        var lagBytes: [Double] = []
        var lagMilliseconds: [Double] = []
        var replicaCPU: [Double] = []
        for run in 1...options.runs {
            for index in ingest.indices {
                let sampler = try ReplicationLagSampler(conninfo: cluster.primaryConninfo)
                let cpuBefore = cluster.cpuSeconds()
                let replicaBefore = cluster.replicaCPUSeconds()
                let wrk = try ToolOutput.wrk(
                    try Shell.check(
                        [
                            "wrk", "-t\(options.wrkThreads)", "-c\(options.ingestConnections)", "-d\(options.seconds)s",
                            "--latency",
                            "-s", IngestBenchmark.script, ingest[index].url, "--", bodies, key,
                            String(options.wrkThreads), String(used),
                        ]))
                let samples = sampler.stop()
                lagBytes += samples.bytes
                lagMilliseconds += samples.milliseconds
                let requests = Double(max(wrk.requests, 1))
                ingest[index].cpuPerRequest.append((cluster.cpuSeconds() - cpuBefore) * 1e6 / requests)
                replicaCPU.append((cluster.replicaCPUSeconds() - replicaBefore) * 1e6 / requests)
                ingest[index].rates.append(wrk.requestsPerSecond)
                ingest[index].p99s.append(wrk.p99Milliseconds ?? .nan)
                ingest[index].errors += wrk.errors
                used += wrk.requests + 64 * options.ingestConnections  // in flight at the end were sent too
                say(
                    String(
                        format:
                            "cluster ingest run %d/%d [%@]: %.0f req/s, p99 %.1f ms, %.0f µs CPU/req, errors %d; replay lag max %.0f bytes",
                        run, options.runs, ingest[index].name, wrk.requestsPerSecond, wrk.p99Milliseconds ?? .nan,
                        ingest[index].cpuPerRequest.last!, wrk.errors, samples.bytes.max() ?? 0))
            }
        }

        let users = try cluster.primary().query(
            "SELECT user_id FROM proj.users ORDER BY user_id LIMIT \(options.readUsers)")
        let usersFile = directory + "/users.txt"
        try ((0..<users.count).compactMap { users[$0, 0] }.joined(separator: "\n") + "\n")
            .write(toFile: usersFile, atomically: true, encoding: .utf8)
        let script = "scripts/bench/get-user.lua"
        var read = [
            Path(name: "HAProxy, 3 instances", url: cluster.haproxyURL),
            Path(name: "node1 direct", url: cluster.nodeURL(1)),
        ]
        // Warm every instance's document cache (HAProxy spreads the users over all three).
        for url in [cluster.haproxyURL, cluster.nodeURL(1)] {
            _ = try Shell.check([
                "wrk", "-t\(options.wrkThreads)", "-c\(options.readConnections)", "-d3s", "-s", script, url, "--",
                usersFile, key,
            ])
        }
        for run in 1...options.runs {
            for index in read.indices {
                let cpuBefore = cluster.cpuSeconds()
                let wrk = try ToolOutput.wrk(
                    try Shell.check(
                        [
                            "wrk", "-t\(options.wrkThreads)", "-c\(options.readConnections)", "-d\(options.seconds)s",
                            "--latency",
                            "-s", script, read[index].url, "--", usersFile, key,
                        ]))
                read[index].cpuPerRequest.append(
                    (cluster.cpuSeconds() - cpuBefore) * 1e6 / Double(max(wrk.requests, 1)))
                read[index].rates.append(wrk.requestsPerSecond)
                read[index].p99s.append(wrk.p99Milliseconds ?? .nan)
                read[index].errors += wrk.errors
                say(
                    String(
                        format: "cluster read run %d/%d [%@]: %.0f req/s, p99 %.2f ms, %.0f µs CPU/req, errors %d",
                        run, options.runs, read[index].name, wrk.requestsPerSecond, wrk.p99Milliseconds ?? .nan,
                        read[index].cpuPerRequest.last!, wrk.errors))
            }
        }
        return Result(
            ingest: ingest, read: read, lagBytes: lagBytes, lagMilliseconds: lagMilliseconds,
            replicaCPUPerWrite: replicaCPU)
    }
}

/// Samples `pg_stat_replication` on the primary every 200 ms on a thread of its own.
final class ReplicationLagSampler: @unchecked Sendable {
    private let connection: Connection
    private let lock = NSLock()
    private var bytes: [Double] = []
    private var milliseconds: [Double] = []
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(conninfo: String) throws {
        connection = try Connection(conninfo, connectTimeout: 5)
        Thread { [self] in
            while lock.withLock({ running }) {
                if let rows = try? connection.query(
                    """
                    SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::float8 AS bytes,
                           COALESCE(extract(epoch FROM replay_lag) * 1000, 0)::float8 AS ms
                    FROM pg_stat_replication
                    """), rows.count > 0
                {
                    let sample = (rows[0, "bytes"].flatMap(Double.init) ?? 0, rows[0, "ms"].flatMap(Double.init) ?? 0)
                    lock.withLock {
                        bytes.append(sample.0)
                        milliseconds.append(sample.1)
                    }
                }
                usleep(200_000)
            }
            done.signal()
        }.start()
    }

    func stop() -> (bytes: [Double], milliseconds: [Double]) {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { (bytes, milliseconds) }
    }
}
