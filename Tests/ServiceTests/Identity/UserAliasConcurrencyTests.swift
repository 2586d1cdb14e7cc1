import EventStore
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// An alias merge racing purchases and debits on both ids (api.md §7): nothing is lost, nothing
/// counts twice, and nothing lands on the alias's stream after its merge.
@Suite(.tags(.database)) final class UserAliasConcurrencyTests {
    let service: TestService
    let day: Int64 = 86_400_000

    init() throws { service = try TestService(threads: 8) }

    deinit { service.stop() }

    @Test func aMergeRacingPurchasesAndDebitsOnBothIdsLosesNothing() throws {
        let api = service.client()
        let now = service.clock.now
        func coins(_ transactionId: String) -> String {
            Mint.signed(
                Mint.transaction(
                    transactionId, product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                    signed: now - day))
        }
        // 300 coins each to start, so every debit of 1 below has enough on either side.
        for (index, user) in ["anon-r", "user-r"].enumerated() {
            for purchase in 0..<3 {
                #expect(try api.purchase(user, coins("52000\(index)\(purchase)")).status == 200)
            }
        }
        let purchases = 16
        let debits = 40
        let signed = (0..<purchases).map { coins("5201\(String(format: "%03d", $0))") }  // minted before the race
        let results = Mutex<[(kind: String, status: Int, userId: String?)]>([])
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        let port = service.app.port
        let key = service.keys["all"]
        let jobs: [(String, Int)] =
            (0..<purchases).map { ("purchase", $0) } + (0..<debits).map { ("debit", $0) } + [("merge", 0)]
        for (kind, index) in jobs {
            ready.enter()
            done.enter()
            Thread.detachNewThread {
                let client = ServiceHTTPClient(port: port, apiKey: key)
                defer { done.leave() }
                _ = try? client.get("/healthz")  // connected first: the calls race each other
                ready.leave()
                start.wait()
                let user = index % 2 == 0 ? "anon-r" : "user-r"
                do {
                    let response: HTTPTestConnection.Response
                    switch kind {
                    case "purchase": response = try client.purchase(user, signed[index])
                    case "debit": response = try client.debit(user, "coins", amount: 1, key: "race-\(index)")
                    default: response = try client.post("/v1/users/user-r/aliases", .object(["alias": "anon-r"]))
                    }
                    results.withLock { $0.append((kind, response.status, response.json["userId"]?.stringValue)) }
                } catch {
                    results.withLock { $0.append((kind, -1, "\(error)")) }
                }
            }
        }
        ready.wait()
        for _ in jobs { start.signal() }
        done.wait()

        let all = results.withLock { $0 }
        #expect(all.count == jobs.count)
        #expect(all.allSatisfy { $0.status == 200 }, "\(all.filter { $0.status != 200 })")
        // A purchase answers whom it was recorded for; a debit names the user only through the alias.
        #expect(all.allSatisfy { $0.kind != "purchase" || $0.userId == "anon-r" || $0.userId == "user-r" })
        #expect(all.allSatisfy { $0.kind != "debit" || $0.userId == nil || $0.userId == "user-r" })
        // 600 to start, 100 per purchase, 1 per debit: every one counted once, on the user.
        let expected = Int64(600 + 100 * purchases - debits)
        let merged = try api.user("user-r")
        #expect(merged["balances"]?["coins"]?.int64Value == expected, "\(merged)")
        #expect(try api.user("anon-r")["balances"]?["coins"]?.int64Value == expected)
        // Nothing after MergedInto on the alias's stream, no chain left to it.
        let connection = try Connection(service.conninfo)
        let last = try connection.query(
            """
            SELECT type FROM es.events
            WHERE stream_id = (SELECT 'user:' || subject FROM identity.subjects WHERE user_id = 'anon-r')
            ORDER BY version DESC LIMIT 1
            """)
        #expect(last[0, 0] == "MergedInto")
        let owned = try connection.query("SELECT count(*)::text FROM proj.chain_owners WHERE user_id = 'anon-r'")
        #expect(owned[0, 0] == "0")
        let chains = try connection.query("SELECT count(*)::text FROM proj.chain_owners WHERE user_id = 'user-r'")
        #expect(chains[0, 0] == String(6 + purchases))
        // The log says the same: a replay finds nothing to correct.
        let dry = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(dry.json["changedUserCount"]?.int64Value == 0, "\(dry.text)")
    }
}
