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
}
