import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

extension ClusterTests {
    /// Three instances on one primary behave as one service: no instance answers from a stale
    /// copy, balances hold under a race spread over instances, and analysts on the replica see
    /// what the primary recorded within seconds.
    @Suite(.tags(.database, .cluster, .slow)) struct Consistency {
        @Test func everyInstanceReadsEveryWriteAtOnceDebitsNeverOverdrawAndTheReplicaServesAnalytics() throws {
            let cluster = try LocalCluster()
            defer { cluster.down() }
            #expect(try cluster.haproxyServers() == ["node1": "UP", "node2": "UP", "node3": "UP"])
            try Self.aWriteThroughOneInstanceIsReadByEveryOtherAtOnce(cluster)
            try Self.fortySpreadDebitsAgainstABalanceOfTenLetExactlyTenThrough(cluster)
            try Self.theReplicaServesTheAnalyticsSchemaWithinSeconds(cluster)
        }

        /// 300 tries over 10 users (each instance caches documents it rendered): a purchase through
        /// HAProxy or one instance, then the user from each of the other instances directly.
        static func aWriteThroughOneInstanceIsReadByEveryOtherAtOnce(_ cluster: LocalCluster) throws {
            let proxy = cluster.client()
            let instances = (0..<3).map { cluster.client($0) }
            var purchases: [String: Int64] = [:]
            var stale: [String] = []
            var servedBy: [String: Int] = [:]
            for attempt in 0..<300 {
                let user = "u-read-\(attempt % 10)"
                // Even tries through HAProxy (X-Served-By names the writer), odd ones to one instance.
                let direct = attempt % 2 == 1 ? attempt % 3 : nil
                let writer = direct.map { instances[$0] } ?? proxy
                let response = try LocalCluster.purchase(writer, user: user, transactionId: String(7_100_000 + attempt))
                try #require(response.status == 200, "try \(attempt): \(response.status) \(response.text)")
                purchases[user, default: 0] += 1
                let served: Int
                if let direct {
                    served = direct
                } else {
                    let name = try #require(response.headers["x-served-by"], "HAProxy names the instance")
                    served = try #require(Int(name.dropFirst("node".count))) - 1
                }
                servedBy["node\(served + 1)", default: 0] += 1
                let expected = purchases[user]! * 100
                for reader in 0..<3 where reader != served {
                    let document = try instances[reader].user(user)
                    let balance = document["balances"]?["coins"]?.int64Value ?? 0
                    if balance != expected {
                        stale.append("try \(attempt): node\(reader + 1) read \(balance), not \(expected)")
                    }
                }
                // History (a replica read once DATABASE_READ_URL is used) never lacks the caller's write.
                if attempt % 10 == 0 {
                    let other = (served + 1) % 3
                    let seen = try LocalCluster.recordedTransactions(instances[other], user: user)
                    if !seen.contains(String(7_100_000 + attempt)) {
                        stale.append("try \(attempt): node\(other + 1)'s history lacks the purchase")
                    }
                }
            }
            #expect(stale.isEmpty, "\(stale.count) stale reads: \(stale.prefix(5))")
            // HAProxy spread its half over every instance.
            #expect(servedBy.keys.sorted() == ["node1", "node2", "node3"], "\(servedBy)")
        }

        /// 40 debits of 1 at the same moment, on separate connections to the three instances in
        /// turn, against a balance of 10: PostgreSQL, not any instance's memory, decides.
        static func fortySpreadDebitsAgainstABalanceOfTenLetExactlyTenThrough(_ cluster: LocalCluster) throws {
            let user = "u-race"
            let bought = try LocalCluster.purchase(
                cluster.client(), user: user, transactionId: "7200001", product: LocalCluster.coins10)
            #expect(bought.json["customer"]?["balances"]?["coins"]?.int64Value == 10, "\(bought.text)")

            let results = Mutex<[(instance: Int, status: Int, body: JSONValue)]>([])
            let ready = DispatchGroup()
            let done = DispatchGroup()
            let start = DispatchSemaphore(value: 0)
            let ports = cluster.instancePorts
            let key = cluster.key
            for index in 0..<40 {
                ready.enter()
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    let client = ServiceHTTPClient(port: ports[index % 3], apiKey: key)
                    // Connected first, so the debits race each other and not the connects.
                    _ = try? client.get("/healthz")
                    ready.leave()
                    start.wait()
                    do {
                        let response = try client.debit(user, "coins", amount: 1, key: "race-\(index)")
                        results.withLock { $0.append((index % 3, response.status, response.json)) }
                    } catch {
                        results.withLock { $0.append((index % 3, -1, .string("\(error)"))) }
                    }
                }
            }
            ready.wait()
            for _ in 0..<40 { start.signal() }
            done.wait()

            let all = results.withLock { $0 }
            let debited = all.filter { $0.status == 200 }
            let refused = all.filter { $0.status == 409 }
            #expect(all.count == 40)
            #expect(debited.count == 10, "\(all.map { "\($0.status)" })")
            #expect(refused.count == 30)
            #expect(debited.allSatisfy { $0.body["result"]?.stringValue == "debited" })
            #expect(Set(debited.compactMap { $0.body["balance"]?.int64Value }) == Set(0...9))
            #expect(refused.allSatisfy { $0.body["code"]?.stringValue == "insufficient_balance" })
            // Every instance took part and every one now reads 0.
            #expect(Set(all.map(\.instance)) == [0, 1, 2])
            for instance in 0..<3 {
                #expect(try cluster.client(instance).user(user)["balances"]?["coins"]?.int64Value == 0)
            }
        }

        /// A purchase through HAProxy reaches `analytics.transactions` on the replica, read as
        /// `iap_analyst`, within seconds (the analytics projector runs on the primary).
        static func theReplicaServesTheAnalyticsSchemaWithinSeconds(_ cluster: LocalCluster) throws {
            let replica = try cluster.postgres("pg2")
            #expect(try replica.query("SELECT pg_is_in_recovery()")[0, 0] == "t", "pg2 is the streaming replica")
            try replica.executeScript("SET ROLE iap_analyst")
            let started = Date()
            #expect(
                try LocalCluster.purchase(cluster.client(), user: "u-analyst", transactionId: "7300001").status == 200)
            try eventually("analytics.transactions on the replica lacks 7300001 after 10 s", within: 10) {
                let rows = try? replica.query(
                    "SELECT product_id FROM analytics.transactions WHERE transaction_id = $1", ["7300001"])
                return rows.map { $0.count == 1 && $0[0, 0] == LocalCluster.coins } ?? false
            }
            print(
                "ClusterTests: the replica served the purchase to iap_analyst after \(Int(Date().timeIntervalSince(started) * 1000)) ms"
            )
            // The analyst role may read analytics there and nothing else.
            #expect(throws: (any Error).self) { try replica.query("SELECT count(*) FROM es.events") }
        }
    }
}
