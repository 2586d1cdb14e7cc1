import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Two service processes on one database, each with its in-process document cache: a write
/// acknowledged by one is what the other answers right after, never an older cached document.
@Suite(.tags(.database)) final class SharedDatabaseCacheTests {
    let first: TestService
    let second: TestService

    init() throws {
        first = try TestService()
        // Same config: one catalog is in force for both anyway (docs/api.md §1.1, CatalogInForceTests).
        second = try TestService(sharing: first)
    }

    deinit {
        second.stop()
        first.stop()
    }

    @Test func eachWriteAcknowledgedByOneProcessIsReadFromTheOtherAtOnce() throws {
        let (a, b) = (first.client(), second.client())
        let now = first.clock.now
        let coins = Mint.transaction(
            "5100001", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        #expect(try a.purchase("u-shared", Mint.signed(coins)).status == 200)
        var balance: Int64 = 100
        for round in 0..<40 {
            // Both caches hold the current document before the write…
            #expect(try a.user("u-shared")["balances"]?["coins"]?.int64Value == balance)
            #expect(try b.user("u-shared")["balances"]?["coins"]?.int64Value == balance)
            // …then one process writes and the other must answer with the write, at once.
            let (writer, reader) = round.isMultiple(of: 2) ? (a, b) : (b, a)
            #expect(try writer.debit("u-shared", "coins", amount: 1, key: "shared-\(round)").status == 200)
            balance -= 1
            #expect(try reader.user("u-shared")["balances"]?["coins"]?.int64Value == balance)
        }
        // A purchase (the ingest path, not the debit path) rewrites the document too.
        let more = Mint.transaction(
            "5100002", product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil,
            signed: now - hour)
        #expect(try b.purchase("u-shared", Mint.signed(more)).status == 200)
        #expect(try a.user("u-shared")["balances"]?["coins"]?.int64Value == balance + 100)
        #expect(try metric("iap_user_cache_reads_total{result=\"hit\"}", of: second) > 0)
    }

    @Test func aReplayByOneProcessReplacesWhatTheOtherCached() throws {
        let (a, b) = (first.client(), second.client())
        let now = first.clock.now
        let removeAds = Mint.transaction(
            "5200001", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        #expect(try a.purchase("u-replayed", Mint.signed(removeAds)).status == 200)
        // A stored document gone wrong (as a bug would leave it), read and cached by both.
        let admin = try Connection(first.conninfo)
        _ = try admin.execute(
            "UPDATE proj.users SET document = replace(document, '\"no_ads\"', '\"ad_free\"'), changed_tx = DEFAULT WHERE user_id = $1",
            ["u-replayed"])
        for client in [a, b] {
            let document = try client.user("u-replayed")
            #expect(document["entitlements"]?["ad_free"]?["active"]?.boolValue == true)
            #expect(document["entitlements"]?["no_ads"] == nil)
        }
        // The second process rebuilds every document from the log and swaps the tables.
        #expect(try b.post("/v1/admin/replay", .object([:])).status == 200)
        for client in [a, b] {
            let document = try client.user("u-replayed")
            #expect(document["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
            #expect(document["entitlements"]?["ad_free"] == nil)
        }
    }

    private func metric(_ series: String, of service: TestService) throws -> Double {
        let text = try service.client().get("/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? -1
    }
}
