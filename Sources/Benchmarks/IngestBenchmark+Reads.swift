import Foundation

extension IngestBenchmark {
    /// `ingest --reads`: after the ingest runs, `GET /v1/users/{id}` on each service (64
    /// connections, the first 25,000 users it ingested, as `run` does), each run after one
    /// `pgbench -S`. CPU per read (service + PostgreSQL) is the figure to compare: on a shared
    /// machine req/s follows the neighbours, CPU per read much less. Each run also measures the
    /// ceiling (issue 39): `GET /healthz`, a constant answer through the same MHD workers and
    /// router with no PostgreSQL, next to the service's own CPU per read.
    static func reads(_ options: Options, cluster: BenchCluster, targets: [Target], work: String) throws {
        let say = BenchmarkSuite.say
        let p = BenchmarkSuite.Parameters()
        let script = "scripts/bench/get-user.lua"
        var files: [String] = []
        for (index, target) in targets.enumerated() {
            let users = try cluster.query(
                "SELECT user_id FROM proj.users ORDER BY user_id LIMIT \(p.readUsers)", database: target.database)
            guard users.count > 0 else { throw Shell.Failure(description: "[\(index + 1)] ingested no users") }
            let file = work + "/users-\(index + 1).txt"
            try ((0..<users.count).compactMap { users[$0, 0] }.joined(separator: "\n") + "\n")
                .write(toFile: file, atomically: true, encoding: .utf8)
            files.append(file)
            // Warm: every user's document in the cache, as in `run`.
            _ = try Shell.check([
                "wrk", "-t\(p.wrkThreads)", "-c\(p.readConnections)", "-d3s", "-s", script,
                target.service.url, "--", file, target.key,
            ])
        }
        let select = [
            "pgbench", "-S", "-n", "-M", "prepared", "-c", String(p.readConnections), "-j", String(p.wrkThreads),
            "-T", String(options.seconds),
        ]
        var baseline: [Double] = []
        var rates = Array(repeating: [Double](), count: targets.count)
        var p99s = rates
        var cpus = rates
        var serviceCPUs = rates
        var trivialRates = rates
        var trivialCPUs = rates
        for run in 1...options.runs {
            baseline.append(try ToolOutput.pgbench(try Shell.check(select + cluster.clientFlags + ["pgbench"])).tps)
            var line = "read run \(run)/\(options.runs): pgbench -S \(Int(baseline.last!)) tps"
            for (index, target) in targets.enumerated() {
                let serviceBefore = cpuSeconds(of: [target.service.pid])
                let before = serviceBefore + cpuSeconds(ofChildrenOf: cluster.server.postmasterPID)
                let wrk = try ToolOutput.wrk(
                    try Shell.check(
                        [
                            "wrk", "-t\(p.wrkThreads)", "-c\(p.readConnections)", "-d\(options.seconds)s", "--latency",
                            "-s", script,
                            target.service.url, "--", files[index], target.key,
                        ]))
                let serviceAfter = cpuSeconds(of: [target.service.pid])
                let cpu = serviceAfter + cpuSeconds(ofChildrenOf: cluster.server.postmasterPID) - before
                serviceCPUs[index].append((serviceAfter - serviceBefore) * 1e6 / Double(max(wrk.requests, 1)))
                let trivial = try ToolOutput.wrk(
                    try Shell.check([
                        "wrk", "-t\(p.wrkThreads)", "-c\(p.readConnections)", "-d\(options.seconds)s", "--latency",
                        target.service.url + "/healthz",
                    ]))
                let trivialCPU = cpuSeconds(of: [target.service.pid]) - serviceAfter
                trivialRates[index].append(trivial.requestsPerSecond)
                trivialCPUs[index].append(trivialCPU * 1e6 / Double(max(trivial.requests, 1)))
                rates[index].append(wrk.requestsPerSecond)
                p99s[index].append(wrk.p99Milliseconds ?? .nan)
                cpus[index].append(cpu * 1e6 / Double(max(wrk.requests, 1)))
                line += String(
                    format:
                        "; [%d] %.0f req/s p99 %.2f ms %.1f µs CPU/read (service %.1f) errors %d; /healthz %.0f req/s %.1f µs",
                    index + 1, wrk.requestsPerSecond, wrk.p99Milliseconds ?? .nan, cpus[index].last!,
                    serviceCPUs[index].last!, wrk.errors, trivial.requestsPerSecond, trivialCPUs[index].last!)
            }
            say(line)
        }
        print(
            String(
                format: "pgbench -S: median %.0f tps (runs %@)", baseline.median!,
                baseline.map { String(format: "%.0f", $0) }.joined(separator: ", ")))
        for (index, target) in targets.enumerated() {
            print(
                String(
                    format:
                        "[%d] %@ reads: median %.0f req/s (runs %@), p99 median %.2f ms, ratio %.3f×, service+PostgreSQL CPU %.1f µs/read (runs %@); cache %@",
                    index + 1, target.binary, rates[index].median!,
                    rates[index].map { String(format: "%.0f", $0) }.joined(separator: ", "),
                    p99s[index].median ?? .nan, rates[index].median! / baseline.median!, cpus[index].median!,
                    cpus[index].map { String(format: "%.1f", $0) }.joined(separator: ", "),
                    BenchmarkSuite.cacheReads(of: target.service, key: target.key)))
            print(
                String(
                    format:
                        "[%d] the ceiling, GET /healthz (constant answer, same workers and router, no PostgreSQL): median %.0f req/s (%.2f× the reads), service CPU %.1f µs/answer (runs %@) against %.1f µs/read (runs %@)",
                    index + 1, trivialRates[index].median!, trivialRates[index].median! / rates[index].median!,
                    trivialCPUs[index].median!,
                    trivialCPUs[index].map { String(format: "%.1f", $0) }.joined(separator: ", "),
                    serviceCPUs[index].median!,
                    serviceCPUs[index].map { String(format: "%.1f", $0) }.joined(separator: ", ")))
        }
    }
}
