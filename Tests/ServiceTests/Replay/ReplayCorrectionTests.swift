import JSON
import Ledger
import TestSupport
import Testing

@testable import Infrastructure
@testable import Replay
@testable import Service

/// A replay tells the change feed what it changed (api.md §4): one CORRECTION per changed user,
/// with before and after; a dry run, or a replay that changes nothing, emits nothing.
@Suite(.tags(.database)) struct ReplayCorrectionTests {
    static func feed(_ harness: TestService) throws -> [JSONValue] {
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
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        try harness.purchase(
            "u-ads-2",
            ["productId": .string(TestService.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        let before = try Self.feed(harness)
        #expect(!before.isEmpty)
        #expect(!before.contains { $0["type"]?.stringValue == "CORRECTION" })

        // Unchanged rules: nothing to correct.
        let same = try harness.app.projections.engine.run(ReplayOptions())
        #expect(same.swapped && same.changedUsers.isEmpty)
        #expect(try Self.feed(harness).count == before.count)

        var catalog = TestService.scenarioConfiguration.catalog
        catalog.products[TestService.removeAds] = Ledger.Product(type: .nonConsumable, entitlements: ["premium"])
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
            "3100003", product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil,
            signed: now - hour)
        #expect(try first.client().purchase("u-cat-3", Mint.signed(coins)).status == 200)
        first.stop()

        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.removeAds] = .init(
            kind: .nonConsumable, entitlements: ["premium"], grants: [:])
        let second = try TestService(configuration: configuration, sharing: first)
        defer { second.stop() }
        let changes = try ChangeFeedTests.feed(second.client(), settled: second.conninfo)
        let corrections = changes.filter { $0["type"]?.stringValue == "CORRECTION" }
        #expect(
            Set(corrections.compactMap { $0["userId"]?.stringValue }) == ["u-cat-1", "u-cat-2"],
            "only the users it changes")
        #expect(corrections.count == 2)
        let one = try #require(corrections.first)
        #expect(one["details"]?["before"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(one["details"]?["after"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
        #expect(one["customer"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
    }
}

/// The swap builds its corrections before it takes the writers' locks; a user written after
/// that is judged again under them, so its one CORRECTION starts from what the write announced.
@Suite(.tags(.database)) struct ReplayStagedCorrectionTests {
    @Test func aUserWrittenAfterTheCorrectionsWereBuiltGetsOneCorrectionFromItsNewDocument() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        try harness.purchase(
            "u-ads-2",
            ["productId": .string(TestService.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        let before = try ReplayCorrectionTests.feed(harness)

        var catalog = TestService.scenarioConfiguration.catalog
        catalog.products[TestService.removeAds] = Ledger.Product(type: .nonConsumable, entitlements: ["premium"])
        var options = ReplayOptions(catalog: catalog)
        options.beforeSwap = {
            _ = try? harness.purchase(
                "u-ads-2",
                ["productId": .string(TestService.coins), "type": .string("Consumable"), "expiresDate": .null])
        }
        let applied = try harness.app.projections.engine.run(options)
        #expect(applied.swapped)
        #expect(Set(applied.changedUsers.map(\.userId)) == ["u-ads", "u-ads-refund", "u-ads-2"])

        let after = Array(try ReplayCorrectionTests.feed(harness).dropFirst(before.count))
        let corrections = after.filter { $0["type"]?.stringValue == "CORRECTION" }
        #expect(corrections.count == 3, "one per changed user: \(corrections.compactMap { $0["userId"]?.stringValue })")
        #expect(Set(corrections.compactMap { $0["userId"]?.stringValue }) == ["u-ads", "u-ads-refund", "u-ads-2"])

        let write = try #require(after.firstIndex { $0["type"]?.stringValue == "CONSUMABLE_PURCHASE" })
        #expect(after[write]["userId"]?.stringValue == "u-ads-2")
        let correction = try #require(
            after.firstIndex {
                $0["type"]?.stringValue == "CORRECTION" && $0["userId"]?.stringValue == "u-ads-2"
            })
        #expect(correction > write, "the correction follows the write it was judged after")
        let announced = try #require(after[write]["customer"]?["balances"])
        #expect(announced != .object([:]), "the write gave coins")
        #expect(after[correction]["details"]?["before"]?["balances"] == announced, "before is what the write announced")
        #expect(after[correction]["details"]?["before"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(after[correction]["details"]?["after"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
        #expect(after[correction]["details"]?["after"]?["balances"] == announced)

        // The correction's customer is the document the swap made live.
        let live = try harness.request("GET", "/v1/users/u-ads-2")
        #expect(live.status == 200)
        #expect(live.json["entitlements"] == after[correction]["customer"]?["entitlements"])
        #expect(live.json["balances"] == announced)
        // The staged ones: users nobody wrote keep the corrections built before the locks.
        let ads = try #require(corrections.first { $0["userId"]?.stringValue == "u-ads" })
        #expect(ads["details"]?["before"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(ads["details"]?["after"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
        #expect(ads["recordedAt"] == after[correction]["recordedAt"], "all recorded at the swap")
    }
}
