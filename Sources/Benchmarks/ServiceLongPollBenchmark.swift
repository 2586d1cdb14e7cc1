import Foundation
import HTTP
import JSON
import TestSupport

/// What `waiters` idle `GET /v1/changes?wait=60` long polls cost the real service: its VmRSS
/// once they all wait (its `iap_changes_waiters` gauge says so) minus before. One purchase then
/// answers them all, and every waiter must get it, so the figure is only printed when the
/// service really held each one.
enum ServiceLongPollBenchmark {
    static func measure(service: ServiceProcess, key: String, purchaseBody: String, waiters: Int) throws
        -> LongPollBenchmark.Result
    {
        let limit = OpenFileLimit.raiseToHard()
        guard limit >= waiters + 64 else {
            throw Shell.Failure(
                description: "\(waiters) waiters need \(waiters + 64) open files; the hard limit is \(limit)")
        }
        let port = Int(service.url.split(separator: ":").last ?? "") ?? 0
        let head = try HTTPTestConnection(port: port).request(
            "GET", "/v1/changes?limit=1", headers: ["Authorization": "Bearer \(key)"])
        let after = (try? JSONValue.parse(head.body))?["next"]?.stringValue ?? "0-0"
        // Every change so far: start after the newest.
        var cursor = after
        while true {
            let response = try HTTPTestConnection(port: port).request(
                "GET", "/v1/changes?limit=1000&after=\(cursor)", headers: ["Authorization": "Bearer \(key)"])
            let page = try JSONValue.parse(response.body)
            guard let next = page["next"]?.stringValue, next != cursor else { break }
            cursor = next
        }
        let before = residentMegabytes(pid: service.pid)
        var clients: [HTTPTestConnection] = []
        for _ in 0..<waiters {
            let client = try HTTPTestConnection(port: port, receiveTimeout: 90)
            try client.send(
                "GET /v1/changes?after=\(cursor)&wait=60 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\n\r\n"
            )
            clients.append(client)
        }
        let deadline = Date().addingTimeInterval(60)
        while waiting(port: port) < waiters && Date() < deadline { usleep(20_000) }
        guard waiting(port: port) == waiters else {
            throw Shell.Failure(description: "only \(waiting(port: port)) of \(waiters) long polls waited")
        }
        let during = residentMegabytes(pid: service.pid)
        let posted = try HTTPTestConnection(port: port).request(
            "POST", "/v1/purchases", headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/json"],
            body: Array(purchaseBody.utf8))
        guard posted.status == 200 else { throw Shell.Failure(description: "purchase answered \(posted.status)") }
        var answered = 0
        for client in clients {
            if let response = try? client.readResponse(), response.status == 200,
                (try? JSONValue.parse(response.body))?["changes"]?.arrayValue?.count == 1
            {
                answered += 1
            }
        }
        guard answered == waiters else {
            throw Shell.Failure(description: "\(answered) of \(waiters) long polls got the change")
        }
        return LongPollBenchmark.Result(waiters: waiters, rssBeforeMB: before, rssAfterMB: during)
    }

    /// The service's `iap_changes_waiters`.
    static func waiting(port: Int) -> Int {
        guard let metrics = try? HTTPTestConnection(port: port).request("GET", "/metrics") else { return -1 }
        let line = metrics.text.split(separator: "\n").first { $0.hasPrefix("iap_changes_waiters ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? -1
    }

    static func residentMegabytes(pid: Int32) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return .nan }
        return kilobytes / 1024
    }
}

extension BenchmarkSuite {
    /// The service-level long-poll figure: `longPollWaiters` idle waiters on the running service.
    mutating func serviceLongPollBenchmark(service: ServiceProcess, key: String) throws {
        // A purchase of its own: one the ingest runs sent would be a duplicate (no change) when
        // they used up the minted file, as a fast machine does.
        let body = String(decoding: PurchaseMinting.body(userId: "bench-long-poll"), as: UTF8.self)
        let waiters = parameters.longPollWaiters
        let result = try ServiceLongPollBenchmark.measure(
            service: service, key: key, purchaseBody: body, waiters: waiters)
        rows.append(
            BenchmarkRow(
                name: "\(waiters) idle GET /v1/changes?wait=60 long polls on iap-ledger serve (VmRSS added)",
                figure: String(
                    format: "+%.1f MB (%.1f → %.1f MB)", result.addedMB, result.rssBeforeMB, result.rssAfterMB),
                runs: [result.addedMB], baseline: "aim 20 MB", baselineRuns: [],
                ratio: String(format: "%.2f× aim", result.addedMB / 20), aim: "≤ 20 MB (#13)",
                met: result.addedMB <= 20,
                command:
                    "\(waiters) × curl 'localhost:$PORT/v1/changes?after=$HEAD&wait=60' while grep VmRSS /proc/$PID/status",
                baselineCommand: ""))
    }
}
