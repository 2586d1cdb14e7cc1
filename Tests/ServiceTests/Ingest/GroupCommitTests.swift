import EventStore
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Group commit end to end: purchases and notifications posted at the same moment over
/// separate connections share transactions, and each is answered and recorded exactly as if
/// it had been alone — also those that cannot share (the same user twice, a takeover of
/// another user's chain, a redelivered notification). Whether requests meet depends on which
/// HTTP worker accepted each connection (libmicrohttpd binds a connection to one), so rounds
/// repeat until a batch formed.
@Suite(.tags(.database)) final class GroupCommitTests {
    let service: TestService

    init() throws { service = try TestService(threads: 32) }

    deinit { service.stop() }

    /// Batches that carried more than one request, from `/metrics` text.
    static func batchesOfMoreThanOne(_ metrics: String) -> Double {
        func value(_ series: String) -> Double {
            let line = metrics.split(separator: "\n").first { $0.hasPrefix(series + " ") }
            return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        }
        return value("iap_ingest_batch_size_count") - value(#"iap_ingest_batch_size_bucket{le="1"}"#)
    }

    /// Posts every request at once, each on its own connection; answers in the same order.
    func postTogether(_ requests: [@Sendable (ServiceHTTPClient) throws -> ServiceHTTPClient.Response]) -> [(
        Int, JSONValue
    )] {
        let answers = Mutex<[Int: (Int, JSONValue)]>([:])
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        let port = service.app.port
        let key = service.keys["all"]
        for (index, request) in requests.enumerated() {
            ready.enter()
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                let client = ServiceHTTPClient(port: port, apiKey: key)
                _ = try? client.get("/healthz")  // connected before the race
                ready.leave()
                start.wait()
                let answer = (try? request(client)).map { ($0.status, $0.json) } ?? (-1, .null)
                answers.withLock { $0[index] = answer }
            }
        }
        ready.wait()
        for _ in requests { start.signal() }
        done.wait()
        return answers.withLock { all in requests.indices.map { all[$0] ?? (-1, .null) } }
    }

    @Test func concurrentRequestsShareCommitsAndEachGetsItsOwnAnswer() throws {
        let api = service.client()
        let now = service.clock.now
        func removeAds(_ id: String) -> String {
            Mint.signed(
                Mint.transaction(
                    id, product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
                    signed: now - day))
        }
        // zed owns a chain that u-taker takes over in the race (a lock after the batch's: alone).
        #expect(try api.purchase("u-zed", removeAds("5009999")).status == 200)
        let redelivered = Mint.notification(
            "SUBSCRIBED", "INITIAL_BUY",
            transaction: Mint.transaction(
                "5008888", product: TestService.monthly, purchase: now - day, expires: now + day, signed: now - day),
            renewal: Mint.renewal(signed: now - day))

        var rounds = 0
        while rounds < 20 {
            rounds += 1
            let base = 5_000_000 + rounds * 1000
            let round = rounds
            var requests: [@Sendable (ServiceHTTPClient) throws -> ServiceHTTPClient.Response] = (0..<24).map { index in
                let id = String(base + index)
                let signed = removeAds(id)
                return { try $0.purchase("u-\(id)", signed) }
            }
            // The same user twice, and a user taking over zed's chain.
            let (first, second, takeover) = (
                removeAds(String(base + 100)), removeAds(String(base + 101)), removeAds("5009999")
            )
            requests.append { try $0.purchase("u-twice-\(round)", first) }
            requests.append { try $0.purchase("u-twice-\(round)", second) }
            requests.append { try $0.purchase("u-taker-\(round)", takeover) }
            // One notification posted three times: recorded once.
            for _ in 0..<3 { requests.append { try $0.notify(redelivered) } }
            let answers = postTogether(requests)

            for index in 0..<24 {
                let id = String(base + index)
                let (status, body) = answers[index]
                #expect(status == 200, "\(body)")
                #expect(body["userId"]?.stringValue == "u-\(id)")
                #expect(body["transactions"]?[0]?["transactionId"]?.stringValue == id)
                #expect(body["transactions"]?[0]?["result"]?.stringValue == "recorded")
                #expect(body["customer"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true, "\(body)")
                #expect(
                    try api.events("u-\(id)").map { $0["type"]?.stringValue ?? "" } == [
                        "TransactionRecorded", "ChainClaimed",
                    ])
            }
            #expect(answers[24].0 == 200 && answers[25].0 == 200, "\(answers[24]) \(answers[25])")
            #expect(try api.user("u-twice-\(rounds)")["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
            #expect(answers[26].0 == 200)
            #expect(
                answers[26].1["transactions"]?[0]?["transferredFrom"]?.stringValue
                    == (rounds == 1 ? "u-zed" : "u-taker-\(rounds - 1)"))
            let results = answers[27...].map { $0.1["result"]?.stringValue ?? "\($0.0)" }
            #expect(results.filter { $0 == "recorded" }.count == (rounds == 1 ? 1 : 0), "\(results)")
            #expect(results.filter { $0 == "duplicate" }.count == (rounds == 1 ? 2 : 3), "\(results)")
            if Self.batchesOfMoreThanOne(try api.get("/metrics").text) > 0 { break }
        }
        let metrics = try api.get("/metrics").text
        #expect(
            Self.batchesOfMoreThanOne(metrics) > 0,
            "no batch formed in \(rounds) rounds: \(metrics.split(separator: "\n").filter { $0.contains("batch_size") })"
        )

        // The stored documents are what the log folds to: a dry run changes no one.
        let replay = try api.post("/v1/admin/replay", ["dryRun": .bool(true)])
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
        // Each new purchase's user has its one change in the feed.
        let rows = try Connection(service.conninfo).query(
            """
            SELECT count(*) FILTER (WHERE n <> 1) AS wrong, count(*) AS users FROM (
                SELECT i.user_id, count(*) AS n FROM changes.feed f JOIN identity.subjects i ON i.subject = f.user_id
                WHERE i.user_id ~ '^u-50[0-9]{5}$' GROUP BY i.user_id) s
            """)
        #expect(rows[0, "wrong"] == "0")
        #expect(rows[0, "users"] == String(rounds * 24))
    }
}
