import AppStore
import Foundation
import Ledger
import TestSupport

// iap-ledger-bench: the benchmarks of `make bench`. Every figure it prints can be reproduced with
// one of these subcommands or with the wrk/pgbench/openssl command printed next to it.
let usage = """
    usage: iap-ledger-bench <command> [options]

      run [--runs N] [--seconds S] [--purchases N] [--out FILE] [--only cpu,longpoll,http,ingest,read,webhooks,replay,logmigration,cluster]
                      every benchmark (or the groups named) next to its baseline; rewrites the table in FILE
                      (BENCHMARKS.md; with --only and no --out, a file in the temp directory). Focused runs:
                      --only webhooks, ingest, read, replay or logmigration, each a few minutes, baselines interleaved as in the full run
      verify [--seconds S]      JWS verifications/s, warm chain cache, one thread
      verify-cpu [--count N]    CPU µs per warm-cache verification (count-bounded; for A/B of fixes)
      fold [--events N]         ledger fold events/s in memory, one thread
      webhooks [--runs N] [--seconds S] [--statements] [--serve BINARY]...
                      ingest CPU per purchase with one webhook endpoint vs none, and delivery lag to a local receiver;
                      --statements as for ingest, for each service; with several --serve binaries, each runs the
                      endpoint's service on its own database and receiver, in turn in every run (A/B)
      long-poll [--waiters N]   RSS added by N (1,000) idle long-poll waiters on an in-process HTTPServer
      ingest [--runs N] [--seconds S] [--purchases N] [--threads N] [--serve BINARY]... [--pause S] [--reads]
             [--statements]
                      only the purchase-ingest benchmark (pgbench INSERT, then wrk POST); with several
                      --serve binaries (BINARY or BINARY@THREADS), each on its own database, measured in turn in every run (A/B);
                      --reads then does the same for GET /v1/users/{id} (pgbench -S, CPU per read);
                      --statements loads pg_stat_statements and prints where PostgreSQL's time per purchase goes
      replay [--events N] [--users N] [--runs N] [--database-url URL] [--analytics]
                      only the replay benchmark of `run`, each run next to its COPY: on its own cluster,
                      or on URL's database (seeded only while its log is empty); --analytics then times
                      the analytics catch-up over the same log, as `run` does
      cluster [--runs N] [--seconds S]
                      deploy/local-cluster (HAProxy, 3 instances, PgBouncer, streaming replica): ingest and
                      reads through HAProxy vs node1 directly, and the replica's replay lag
      pool                      connection pool vs own connections, appends/s and readAll pages on a private
                      cluster (not part of `run`: a figure for tuning the pool size)
      mint-purchases --count N --out FILE
                      pre-minted POST /v1/purchases bodies (one JSON per line) for scripts/bench/post-purchase.lua
    """

func option(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: "--" + name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// The options each command reads. Anything else is refused: a typo (or `--help`) must not start a
/// long benchmark with the defaults.
let knownOptions: [String: Set<String>] = [
    "run": ["runs", "seconds", "purchases", "out", "only"], "verify": ["seconds"], "verify-cpu": ["count"],
    "fold": ["events"], "webhooks": ["runs", "seconds", "statements", "serve"], "long-poll": ["waiters"],
    "ingest": ["runs", "seconds", "purchases", "threads", "serve", "pause", "reads", "statements"],
    "replay": ["events", "users", "runs", "database-url", "analytics"], "cluster": ["runs", "seconds", "out"],
    "pool": [],
    "mint-purchases": ["count", "out"],
]
/// Options whose value is text, not a number; `--reads`, `--statements` and `--analytics` take none.
let textOptions: Set<String> = ["out", "only", "serve", "database-url"]
/// Commands that hand wrk, pgbench and deploy/local-cluster the repository's scripts by relative path.
let repositoryCommands: Set<String> = ["run", "webhooks", "ingest", "cluster"]

/// Why `arguments` (after the command) cannot run, or nil.
func problem(with arguments: ArraySlice<String>, of command: String) -> String? {
    guard let known = knownOptions[command] else { return "unknown command \(command)" }
    var index = arguments.startIndex
    while index < arguments.endIndex {
        let argument = arguments[index]
        guard argument.hasPrefix("--"), known.contains(String(argument.dropFirst(2))) else {
            return "\(command) does not take \(argument)"
        }
        let name = String(argument.dropFirst(2))
        index += 1
        if name == "reads" || name == "statements" || name == "analytics" { continue }
        guard index < arguments.endIndex else { return "--\(name) needs a value" }
        if !textOptions.contains(name), Double(arguments[index]) == nil {
            return "--\(name) needs a number, not \(arguments[index])"
        }
        index += 1
    }
    if repositoryCommands.contains(command), !FileManager.default.fileExists(atPath: "scripts/bench/post-purchase.lua")
    {
        return "run it from the repository root (no scripts/bench/ in \(FileManager.default.currentDirectoryPath))"
    }
    return nil
}

func main() -> Int32 {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard let command = arguments.first else {
        print(usage)
        return 2
    }
    if ["--help", "-h", "help"].contains(command) || arguments.contains("--help") {
        print(usage)
        return 0
    }
    if let problem = problem(with: arguments.dropFirst(), of: command) {
        FileHandle.standardError.write(Data("iap-ledger-bench: \(problem)\n".utf8))
        return 2
    }
    do {
        switch command {
        case "verify-cpu":
            // Count-bounded, CPU-time based: steadier than wall-clock rates on a shared machine (A/B of fixes).
            let count = option("count", in: arguments).flatMap(Int.init) ?? 20_000
            let rate = AppStoreBenchmark.verifyPerCPUSecond(count: count)
            print(String(format: "%.1f µs CPU per verify (%.0f verify per CPU-second)", 1e6 / rate, rate))
        case "verify":
            let seconds = option("seconds", in: arguments).flatMap(Double.init) ?? 3
            print(String(format: "%.0f verify/s", AppStoreBenchmark.verifyThroughput(seconds: seconds)))
        case "fold":
            let events = option("events", in: arguments).flatMap(Int.init) ?? 1_000_000
            print(String(format: "%.0f events/s", LedgerBenchmark.foldThroughput(events: events)))
        case "webhooks":
            var options = WebhookBenchmark.Options()
            options.runs = option("runs", in: arguments).flatMap(Int.init) ?? options.runs
            options.seconds = option("seconds", in: arguments).flatMap(Int.init) ?? options.seconds
            options.statements = arguments.contains("--statements")
            options.binaries = arguments.indices.dropLast().filter { arguments[$0] == "--serve" }.map {
                arguments[$0 + 1]
            }
            try WebhookBenchmark.runAlone(options)
        case "long-poll":
            print(try LongPollBenchmark.measure(waiters: option("waiters", in: arguments).flatMap(Int.init) ?? 1_000))
        case "replay":
            try ReplayRuns.run(
                events: option("events", in: arguments).flatMap(Int.init) ?? 1_000_000,
                users: option("users", in: arguments).flatMap(Int.init) ?? 100_000,
                runs: option("runs", in: arguments).flatMap(Int.init) ?? 3,
                databaseURL: option("database-url", in: arguments), analytics: arguments.contains("--analytics"))
        case "cluster":
            var parameters = BenchmarkSuite.Parameters()
            if let runs = option("runs", in: arguments).flatMap(Int.init) { parameters.runs = runs }
            if let seconds = option("seconds", in: arguments).flatMap(Int.init) { parameters.seconds = seconds }
            parameters.groups = ["cluster"]
            parameters.output = option("out", in: arguments) ?? NSTemporaryDirectory() + "iap-cluster-bench.md"
            var suite = BenchmarkSuite(parameters: parameters)
            try suite.run()
        case "pool":
            try PoolRuns.run()
        case "mint-purchases":
            guard let count = option("count", in: arguments).flatMap(Int.init), let out = option("out", in: arguments)
            else {
                print(usage)
                return 2
            }
            try PurchaseMinting.write(count: count, to: out)
        case "ingest":
            var options = IngestBenchmark.Options()
            if let runs = option("runs", in: arguments).flatMap(Int.init) { options.runs = runs }
            if let seconds = option("seconds", in: arguments).flatMap(Int.init) { options.seconds = seconds }
            if let purchases = option("purchases", in: arguments).flatMap(Int.init) { options.purchases = purchases }
            if let pause = option("pause", in: arguments).flatMap(Int.init) { options.pause = pause }
            options.reads = arguments.contains("--reads")
            options.statements = arguments.contains("--statements")
            if let threads = option("threads", in: arguments).flatMap(Int.init) { options.serviceThreads = threads }
            options.binaries = arguments.indices.dropLast().filter { arguments[$0] == "--serve" }.map {
                arguments[$0 + 1]
            }
            try IngestBenchmark.run(options)
        case "run":
            var parameters = BenchmarkSuite.Parameters()
            if let runs = option("runs", in: arguments).flatMap(Int.init) { parameters.runs = runs }
            if let seconds = option("seconds", in: arguments).flatMap(Int.init) { parameters.seconds = seconds }
            if let purchases = option("purchases", in: arguments).flatMap(Int.init) { parameters.purchases = purchases }
            if let out = option("out", in: arguments) { parameters.output = out }
            if let only = option("only", in: arguments) {
                parameters.groups = Set(only.split(separator: ",").map(String.init))
                let unknown = parameters.groups.subtracting(BenchmarkSuite.Parameters.knownGroups)
                guard unknown.isEmpty else {
                    FileHandle.standardError.write(
                        Data("iap-ledger-bench: no group \(unknown.sorted().joined(separator: ", "))\n".utf8))
                    return 2
                }
                // A focused run must not replace the full table of BENCHMARKS.md with its few rows.
                if option("out", in: arguments) == nil {
                    parameters.output =
                        NSTemporaryDirectory()
                        + "iap-ledger-bench-\(parameters.groups.sorted().joined(separator: "-")).md"
                }
            }
            var suite = BenchmarkSuite(parameters: parameters)
            try suite.run()
        default:
            print(usage)
            return 2
        }
        return 0
    } catch {
        FileHandle.standardError.write(Data("iap-ledger-bench \(command): \(error)\n".utf8))
        return 1
    }
}

exit(main())
