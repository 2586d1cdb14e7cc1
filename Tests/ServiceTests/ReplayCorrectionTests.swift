import JSON
import Ledger
import Testing
import TestSupport
@testable import Service

/// A replay tells the change feed what it changed (api.md §4): one CORRECTION per changed user,
/// with before and after; a dry run, or a replay that changes nothing, emits nothing.
@Suite struct ReplayCorrectionTests {
    static func feed(_ harness: ReplayHarness) throws -> [JSONValue] {
        try ChangeFeedTests.settle(harness.conninfo)
        var all: [JSONValue] = []
        var after = "0-0"
        while true {
            let page = try harness.request("GET", "/v1/changes?limit=1000&after=" + after)
            #expect(page.status == 200, "\(page.json)")
            let changes = page.json["changes"]?.arrayValue ?? []
            if changes.isEmpty { return all }
            all += changes
            after = try #require(page.json["next"]?.stringValue)
        }
    }

    @Test func aReplayThatChangesDocumentsEmitsOneCorrectionPerChangedUserAndADryRunNone() throws {
        let harness = try ReplayHarness()
        try harness.runScenarios()
        try harness.purchase("u-ads-2", ["productId": .string(ReplayHarness.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        let before = try Self.feed(harness)
        #expect(!before.isEmpty)
        #expect(!before.contains { $0["type"]?.stringValue == "CORRECTION" })

        // Unchanged rules: nothing to correct.
        let same = try harness.app.projections.engine.run(ReplayOptions())
        #expect(same.swapped && same.changedUsers.isEmpty)
        #expect(try Self.feed(harness).count == before.count)

        var catalog = ReplayHarness.configuration.catalog
        catalog.products[ReplayHarness.removeAds] = Ledger.Product(type: .nonConsumable, entitlements: ["premium"])
        _ = try harness.app.projections.engine.run(ReplayOptions(dryRun: true, catalog: catalog))
        #expect(try Self.feed(harness).count == before.count, "a dry run emits nothing")

        let applied = try harness.app.projections.engine.run(ReplayOptions(catalog: catalog))
        let changedUsers = Set(applied.changedUsers.map(\.userId))
        #expect(changedUsers == ["u-ads", "u-ads-refund", "u-ads-2"])
        let after = try Self.feed(harness)
        let corrections = after.dropFirst(before.count)
        #expect(corrections.allSatisfy { $0["type"]?.stringValue == "CORRECTION" })
        #expect(Set(corrections.compactMap { $0["userId"]?.stringValue }) == changedUsers)
        #expect(corrections.count == changedUsers.count, "one per changed user")
        let ads = try #require(corrections.first { $0["userId"]?.stringValue == "u-ads-2" })
        #expect(ads["details"]?["before"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(ads["details"]?["after"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
        #expect(ads["details"]?["after"]?["entitlements"]?["no_ads"] == nil)
        #expect(ads["details"]?["before"]?["balances"] != nil)
        #expect(ads["environment"] == .null)
        #expect(ads["customer"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
        // What was published before is untouched.
        #expect(Array(after.prefix(before.count)) == before)
    }

    @Test func aNewCatalogRecordedAtStartEmitsACorrectionForEveryUserItChanges() throws {
        let first = try TestService()
        let now = first.clock.now
        for user in ["u-cat-1", "u-cat-2"] {
            let id = user == "u-cat-1" ? "3100001" : "3100002"
            let fields = Mint.transaction(
                id, product: TestService.removeAds, type: "Non-Consumable", purchase: now - hour, expires: nil,
                signed: now - hour)
            #expect(try first.client().purchase(user, Mint.signed(fields)).status == 200)
        }
        let coins = Mint.transaction(
            "3100003", product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil, signed: now - hour)
        #expect(try first.client().purchase("u-cat-3", Mint.signed(coins)).status == 200)
        first.stop()

        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.removeAds] = .init(kind: .nonConsumable, entitlements: ["premium"], grants: [:])
        let second = try TestService(configuration: configuration, sharing: first)
        defer { second.stop() }
        let changes = try ChangeFeedTests.feed(second.client(), settled: second.conninfo)
        let corrections = changes.filter { $0["type"]?.stringValue == "CORRECTION" }
        #expect(Set(corrections.compactMap { $0["userId"]?.stringValue }) == ["u-cat-1", "u-cat-2"], "only the users it changes")
        #expect(corrections.count == 2)
        let one = try #require(corrections.first)
        #expect(one["details"]?["before"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(one["details"]?["after"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
        #expect(one["customer"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
    }
}
