import Foundation
import HTTP
import Synchronization
import TestSupport

/// `iap-ledger-bench long-poll`: what idle long-poll waiters cost. An `HTTPServer` in this
/// process (the service's 32 workers) whose only route defers and never completes until the
/// end; `waiters` keep-alive connections each send one request; the figure is this process's
/// `VmRSS` once every request is suspended minus `VmRSS` with the server started and idle.
/// Clients share the process, so their (small) objects are in the figure too; kernel socket
/// buffers are not RSS. At the end every waiter is completed and its answer read, so a figure
/// is only printed when the server really held them all.
enum LongPollBenchmark {
    struct Result: CustomStringConvertible {
        var waiters: Int
        var rssBeforeMB: Double
        var rssAfterMB: Double
        var addedMB: Double { rssAfterMB - rssBeforeMB }
        var description: String {
            String(
                format: "%d idle long-poll waiters: VmRSS %.1f MB -> %.1f MB (+%.1f MB, %.1f KB per waiter)",
                waiters, rssBeforeMB, rssAfterMB, addedMB, addedMB * 1024 / Double(max(1, waiters)))
        }
    }

    static func measure(waiters: Int, threads: Int = 32) throws -> Result {
        // One client and one server socket per waiter in this one process: 2,000+ descriptors
        // for 1,000 waiters, above Debian's default soft limit of 1024.
        let limit = OpenFileLimit.raiseToHard()
        guard limit >= 2 * waiters + 64 else {
            throw Shell.Failure(
                description:
                    "\(waiters) waiters need \(2 * waiters + 64) open files; the hard limit is \(limit) (raise ulimit -Hn)"
            )
        }
        let handles = HandleList()
        var router = Router()
        router.add("GET", "/v1/changes") { _, _ in
            let deferred = HTTPDeferred(
                timeout: .seconds(60), timeoutResponse: .json(200, Array(#"{"changes":[],"next":"c-1"}"#.utf8)))
            handles.append(deferred)
            return .deferred(deferred)
        }
        var configuration = HTTPServer.Configuration()
        configuration.threadCount = threads
        let handler = router
        let server = HTTPServer(configuration: configuration) { handler.handle($0) }
        let port = try server.start()
        defer { server.stop() }

        // Warm the server and the client path once, so "before" already holds what any traffic allocates.
        _ = try HTTPTestConnection(port: port).request("GET", "/nope")
        let before = residentMegabytes()
        var clients: [HTTPTestConnection] = []
        clients.reserveCapacity(waiters)
        for _ in 0..<waiters {
            let client = try HTTPTestConnection(port: port, receiveTimeout: 60)
            try client.send("GET /v1/changes?after=c-1&wait=60 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            clients.append(client)
        }
        let deadline = Date().addingTimeInterval(60)
        while server.deferredRequests < waiters && Date() < deadline { usleep(10_000) }
        guard server.deferredRequests == waiters else {
            throw Shell.Failure(description: "only \(server.deferredRequests) of \(waiters) requests were suspended")
        }
        let after = residentMegabytes()

        for handle in handles.all { handle.complete(.json(200, Array(#"{"changes":[],"next":"c-2"}"#.utf8))) }
        var answered = 0
        for client in clients where (try? client.readResponse())?.status == 200 { answered += 1 }
        guard answered == waiters else {
            throw Shell.Failure(description: "\(answered) of \(waiters) waiters were answered")
        }
        return Result(waiters: waiters, rssBeforeMB: before, rssAfterMB: after)
    }

    /// `VmRSS` of this process in MB (1024 × 1024 bytes).
    static func residentMegabytes() -> Double {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return .nan }
        return kilobytes / 1024
    }

    final class HandleList: Sendable {
        private let handles = Mutex<[HTTPDeferred]>([])
        func append(_ deferred: HTTPDeferred) { handles.withLock { $0.append(deferred) } }
        var all: [HTTPDeferred] { handles.withLock { $0 } }
    }
}

extension BenchmarkSuite {
    mutating func longPollBenchmark() throws {
        let waiters = parameters.longPollWaiters
        Self.say("long-poll: \(waiters) idle waiters on an in-process HTTPServer")
        let result = try LongPollBenchmark.measure(waiters: waiters)
        Self.say("  \(result)")
        notes.append("long-poll: \(result) (clients in the same process, soft open-file limit raised to the hard one).")
        rows.append(
            BenchmarkRow(
                name:
                    "\(BenchmarkReport.number(Double(waiters))) idle long-poll waiters (in-process HTTPServer, 32 workers)",
                figure: String(format: "+%.1f MB RSS", result.addedMB), runs: [result.addedMB],
                baseline: "aim 20 MB", baselineRuns: [], ratio: String(format: "%.2f× aim", result.addedMB / 20),
                aim: "≤ 20 MB", met: result.addedMB <= 20,
                command: ".build/release/iap-ledger-bench long-poll --waiters \(waiters)", baselineCommand: ""))
    }
}
