import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Concurrent debits over separate HTTP connections never overdraw.
@Suite(.tags(.database)) final class ConcurrencyTests {
    let service: TestService

    init() throws { service = try TestService(threads: 8) }

    deinit { service.stop() }

    @Test func fortyConcurrentDebitsOfTenAgainstOneHundredLetExactlyTenThrough() throws {
        let api = service.client()
        let now = service.clock.now
        let coins = Mint.transaction(
            "4000001", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        #expect(
            try api.purchase("u-race", Mint.signed(coins)).json["customer"]?["balances"]?["coins"]?.int64Value == 100)

        let count = 40
        let results = Mutex<[(key: String, status: Int, body: JSONValue)]>([])
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for index in 0..<count {
            ready.enter()
            done.enter()
            let port = service.app.port
            let key = service.keys["write"]
            Thread.detachNewThread {
                let client = ServiceHTTPClient(port: port, apiKey: key)
                defer { done.leave() }
                // Open the connection first, so the debits race each other and not the connects.
                _ = try? client.get("/healthz")
                ready.leave()
                start.wait()
                let key = "race-\(index)"
                do {
                    let response = try client.debit("u-race", "coins", amount: 10, key: key)
                    results.withLock { $0.append((key, response.status, response.json)) }
                } catch {
                    results.withLock { $0.append((key, -1, .string("\(error)"))) }
                }
            }
        }
        ready.wait()
        for _ in 0..<count { start.signal() }
        done.wait()

        let all = results.withLock { $0 }
        let debited = all.filter { $0.status == 200 }
        let refused = all.filter { $0.status == 409 }
        #expect(all.count == count)
        #expect(debited.count == 10, "\(all.map { "\($0.status)" })")
        #expect(refused.count == 30)
        #expect(debited.allSatisfy { $0.body["result"]?.stringValue == "debited" })
        #expect(
            refused.allSatisfy {
                $0.body["code"]?.stringValue == "insufficient_balance" && $0.body["balance"]?.int64Value == 0
            })
        #expect(Set(debited.compactMap { $0.body["balance"]?.int64Value }) == Set(stride(from: 0, through: 90, by: 10)))
        #expect(try api.user("u-race")["balances"]?["coins"]?.int64Value == 0)

        // The same key again answers as the first time did and changes nothing.
        let first = try #require(debited.first)
        let again = try api.debit("u-race", "coins", amount: 10, key: first.key)
        #expect(again.status == 200)
        #expect(again.json["result"]?.stringValue == "duplicate")
        #expect(again.json["balance"] == first.body["balance"])
        #expect(try api.events("u-race").filter { $0["type"]?.stringValue == "BalanceDebited" }.count == 10)
        #expect(try api.user("u-race")["balances"]?["coins"]?.int64Value == 0)
    }

    @Test func concurrentRedeliveriesOfOneNotificationRecordItOnce() throws {
        let now = service.clock.now
        let transaction = Mint.transaction(
            "4000101", product: TestService.monthly, purchase: now - day, expires: now + day, signed: now - day)
        let notification = Mint.notification(
            "SUBSCRIBED", "INITIAL_BUY", transaction: transaction, renewal: Mint.renewal(signed: now - day))
        let port = service.app.port
        let results = Mutex<[String]>([])
        let done = DispatchGroup()
        for _ in 0..<12 {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                let response = try? ServiceHTTPClient(port: port).notify(notification)
                results.withLock {
                    $0.append(response.map { "\($0.status) \($0.json["result"]?.stringValue ?? $0.text)" } ?? "error")
                }
            }
        }
        done.wait()
        let all = results.withLock { $0 }
        #expect(all.filter { $0 == "200 recorded" }.count == 1, "\(all)")
        #expect(all.filter { $0 == "200 duplicate" }.count == 11, "\(all)")
        let api = service.client()
        #expect(try api.purchase("u-redelivered", Mint.signed(transaction)).status == 200)
        // TransactionRecorded, RenewalInfoRecorded, NotificationReceived, ChainClaimed: nothing twice.
        #expect(try api.events("u-redelivered").count == 4)
    }

    /// Chains changing hands in both directions at once: every claim locks in name order (an
    /// owner sorting before the claimant makes the claim start over), so none deadlocks or fails.
    @Test func crossedTransfersAllSucceedAndEndWithTheLastClaimant() throws {
        let api = service.client()
        let now = service.clock.now
        let users = ["u-cross-a", "u-cross-b"]
        let chains = (0..<12).map { "40002\(String(format: "%02d", $0))" }
        var signed: [String: String] = [:]
        for (index, chain) in chains.enumerated() {
            signed[chain] = Mint.signed(
                Mint.transaction(
                    chain, product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
                    signed: now - day))
            #expect(try api.purchase(users[index % 2], signed[chain]!).status == 200)
        }
        let port = service.app.port
        let key = service.keys["write"]
        let statuses = Mutex<[String]>([])
        let done = DispatchGroup()
        for (index, chain) in chains.enumerated() {
            done.enter()
            let body = signed[chain]!
            Thread.detachNewThread {
                defer { done.leave() }
                let response = try? ServiceHTTPClient(port: port, apiKey: key).purchase(users[(index + 1) % 2], body)
                statuses.withLock { $0.append("\(response?.status ?? -1)") }
            }
        }
        done.wait()
        #expect(statuses.withLock { $0 } == Array(repeating: "200", count: chains.count))
        for (index, chain) in chains.enumerated() {
            #expect(try api.get("/v1/subscriptions/\(chain)").json["owner"]?.stringValue == users[(index + 1) % 2])
        }
        for user in users {
            let claimed = try api.events(user).filter { $0["type"]?.stringValue == "ChainClaimed" }.count
            #expect(claimed == chains.count)  // 6 first claims + 6 taken over
        }
    }
}
