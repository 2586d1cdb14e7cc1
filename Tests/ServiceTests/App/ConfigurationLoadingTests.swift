import Foundation
import JSON
import Ledger
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

@Suite(.tags(.database)) struct ConfigurationLoadingTests {
    static let root = TestVectors.repoRoot.path

    @Test func theDeployExampleConfigurationLoads() throws {
        let configuration = try Configuration.load(path: Self.root + "/deploy/config.example.json")
        let app = try #require(configuration.apps.first)
        #expect(configuration.apps.count == 1)
        #expect(app.bundleId == "com.example.game")
        #expect(app.appAppleId == 1_234_567_890)
        #expect(Set(app.environments) == ["Production", "Sandbox"])
        #expect(app.products["com.example.game.coins100"]?.kind == .consumable)
        #expect(app.products["com.example.game.coins100"]?.grants == ["coins": 100])
        #expect(app.products["com.example.game.pro.monthly"]?.entitlements == ["pro"])
        #expect(app.products["com.example.game.removeads"]?.kind == .nonConsumable)
        #expect(configuration.trustedRootsDER.isEmpty, "no trustedRoots: the bundled Apple Root CA - G3")
        #expect(configuration.verifyReceipt.production == "https://buy.itunes.apple.com/verifyReceipt")
        #expect(configuration.transferPolicy == .transfer)
    }

    @Test func theApiDocumentShapeLoadsWithRootsRelativeToTheFile() throws {
        let directory = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/certs", withIntermediateDirectories: true)
        try Data(TestVectors.shared.rootDER).write(to: URL(fileURLWithPath: directory + "/certs/root.der"))
        let text = """
            {"apps": [{"bundleId": "com.example", "appAppleId": 1234, "environments": ["Sandbox", "Production"],
                       "sharedSecret": null,
                       "products": {"gold": {"type": "consumable"}, "vip": {"type": "non-renewing", "entitlements": ["vip"]}}}],
             "trustedRoots": ["certs/root.der"],
             "verifyReceipt": {"production": "http://127.0.0.1:9/p", "sandbox": "http://127.0.0.1:9/s",
                               "timeoutSeconds": 2.5, "retries": 0},
             "transferPolicy": "keep"}
            """
        try text.write(toFile: directory + "/config.json", atomically: true, encoding: .utf8)
        let configuration = try Configuration.load(path: directory + "/config.json")
        #expect(configuration.trustedRootsDER == [TestVectors.shared.rootDER])
        #expect(configuration.trustedRootPaths == [directory + "/certs/root.der"])
        #expect(configuration.verifyReceipt.timeoutSeconds == 2.5)
        #expect(configuration.verifyReceipt.retries == 0)
        #expect(configuration.transferPolicy == .keep)
        #expect(configuration.apps[0].products["vip"]?.kind == .nonRenewing)
    }

    @Test(arguments: [
        (#"{"apps": [{}]}"#, "apps[0].bundleId", "is required"),
        (#"{"apps": [{"bundleId": ""}]}"#, "apps[0].bundleId", "must not be empty"),
        (#"{"apps": [{"bundleId": "a", "appAppleId": 1.5}]}"#, "apps[0].appAppleId", "positive integer"),
        (#"{"apps": [{"bundleId": "a", "appAppleId": -1}]}"#, "apps[0].appAppleId", "positive integer"),
        (#"{"apps": [{"bundleId": "a", "environments": ["Staging"]}]}"#, "apps[0].environments[0]", "Staging"),
        (#"{"apps": [{"bundleId": "a", "environments": []}]}"#, "apps[0].environments", "at least one"),
        (
            #"{"apps": [{"bundleId": "a", "appAppleId": 1}, {"bundleId": "a", "appAppleId": 2}]}"#,
            "apps[1].bundleId", "configured twice"
        ),
        (
            #"{"apps": [{"bundleId": "a", "appAppleId": 1, "products": {"c": {"type": "consumable", "entitlements": ["x"]}}}]}"#,
            "apps[0].products.c.entitlements", "consumable"
        ),
        (
            #"{"apps": [{"bundleId": "a", "appAppleId": 1, "products": {"c": {"type": "consumable", "grants": {"g": 0}}}}]}"#,
            "apps[0].products.c.grants.g", "positive integer"
        ),
        (
            #"{"apps": [{"bundleId": "a", "appAppleId": 1, "products": {"c": {"kind": "consumable"}}}]}"#,
            "apps[0].products.c.kind", "unknown key"
        ),
        (#"{"trustedRoots": []}"#, "trustedRoots", "at least one"),
        (#"{"trustedRoots": "root.der"}"#, "trustedRoots", "expected an array"),
        (#"{"verifyReceipt": {"production": "ftp://x"}}"#, "verifyReceipt.production", "http(s) URL"),
        (#"{"verifyReceipt": {"timeoutSeconds": 0}}"#, "verifyReceipt.timeoutSeconds", "seconds"),
        (#"{"verifyReceipt": {"retries": 11}}"#, "verifyReceipt.retries", "0…10"),
        (#"{"verifyReceipt": {"sandbox": "http://x", "proxy": "y"}}"#, "verifyReceipt.proxy", "unknown key"),
    ])
    func aMistakeNamesTheFileAndTheKey(text: String, key: String, words: String) {
        do {
            _ = try Configuration.parse(Array(text.utf8), file: "/etc/iap/config.json", baseDirectory: "/nonexistent")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.key == key, "\(error)")
            #expect(error.description.hasPrefix("/etc/iap/config.json: \(key): "), "\(error)")
            #expect(error.description.contains(words), "\(error)")
            #expect(!error.description.contains("\n"))
        }
    }
}

@Suite struct NonRenewingConfigurationTests {
    static func parse(_ products: String) throws(ConfigurationError) -> Configuration {
        let text = #"{"apps": [{"bundleId": "b", "environments": ["Sandbox"], "products": \#(products)}]}"#
        return try Configuration.parse(Array(text.utf8), file: "c.json", baseDirectory: ".")
    }

    @Test func aNonRenewingProductTakesAnISODuration() throws {
        let configuration = try Self.parse(
            #"{"pass": {"type": "non-renewing", "entitlements": ["vip"], "duration": "P1M"}}"#)
        #expect(configuration.apps[0].products["pass"]?.duration == "P1M")
        #expect(configuration.warnings.isEmpty)
    }

    @Test func withoutADurationStartUpWarns() throws {
        let configuration = try Self.parse(#"{"pass": {"type": "non-renewing", "entitlements": ["vip"]}}"#)
        #expect(configuration.warnings == ["b: non-renewing product pass has no duration: granted until revoked"])
    }

    @Test(arguments: [
        (
            #"{"p": {"type": "non-renewing", "duration": "1 month"}}"#,
            "apps[0].products.p.duration: expected a positive ISO 8601 duration"
        ),
        (
            #"{"p": {"type": "non-renewing", "duration": "P0D"}}"#,
            "apps[0].products.p.duration: expected a positive ISO 8601 duration"
        ),
        (#"{"p": {"type": "non-renewing", "duration": 30}}"#, "apps[0].products.p.duration: expected a string"),
        (
            #"{"p": {"type": "subscription", "duration": "P1M"}}"#,
            "apps[0].products.p.duration: only a non-renewing product takes a duration"
        ),
    ])
    func badDurationsNameTheKey(products: String, message: String) {
        #expect {
            _ = try Self.parse(products)
        } throws: { error in
            "\(error)".hasPrefix("c.json: " + message)
        }
    }
}

/// A subscription's `period` (api.md §1): one of Apple's six billing periods, recorded with the
/// catalog, which MRR normalises by (§3.1).
@Suite struct BillingPeriodConfigurationTests {
    @Test func aSubscriptionDeclaresItsBillingPeriodAndTheRecordedCatalogKeepsIt() throws {
        let configuration = try NonRenewingConfigurationTests.parse(
            #"{"y": {"type": "subscription", "entitlements": ["pro"], "period": "P1Y"}, "m": {"type": "subscription", "entitlements": ["pro"]}}"#
        )
        #expect(configuration.apps[0].products["y"]?.period == .year)
        #expect(configuration.apps[0].products["m"]?.period == nil)
        let catalog = configuration.catalog
        #expect(catalog.products["y"]?.period == .year)
        // Round trip through the recorded JSON; a product without a period writes none, so a
        // catalog that declares none keeps the hash it always had.
        let json = catalog.canonicalJSON()
        #expect(try Catalog(canonicalJSON: JSONValue.parse(json)) == catalog)
        let text = String(decoding: json, as: UTF8.self)
        #expect(
            text.contains(#""y":{"type":"subscription","entitlements":["pro"],"grants":{},"period":"P1Y"}"#), "\(text)")
        #expect(text.contains(#""m":{"type":"subscription","entitlements":["pro"],"grants":{}}"#), "\(text)")
        // A catalog recorded before periods existed still decodes, without one.
        let old = try Catalog(
            canonicalJSON: JSONValue.parse(
                Array(
                    #"{"products":{"m":{"type":"subscription","entitlements":["pro"],"grants":{}}}}"#.utf8)))
        #expect(old.products["m"] == Ledger.Product(type: .subscription, entitlements: ["pro"]))
    }

    @Test(arguments: [
        (
            #"{"p": {"type": "subscription", "period": "P5W"}}"#,
            "apps[0].products.p.period: expected one of P1W, P1M, P2M, P3M, P6M, P1Y (ISO 8601), got \"P5W\""
        ),
        (#"{"p": {"type": "subscription", "period": "P30D"}}"#, "apps[0].products.p.period: expected one of P1W"),
        (#"{"p": {"type": "subscription", "period": 12}}"#, "apps[0].products.p.period: expected a string"),
        (
            #"{"p": {"type": "non-renewing", "duration": "P1M", "period": "P1M"}}"#,
            "apps[0].products.p.period: only a subscription takes a billing period"
        ),
    ])
    func aPeriodOtherThanApplesSixNamesTheKeyAndTheFile(products: String, message: String) {
        #expect {
            _ = try NonRenewingConfigurationTests.parse(products)
        } throws: { error in
            "\(error)".hasPrefix("c.json: " + message)
        }
    }
}

/// A subscription's `group` (api.md §1, §8): its subscription group, recorded with the catalog,
/// which introductory-offer eligibility judges by.
@Suite struct SubscriptionGroupConfigurationTests {
    @Test func aSubscriptionDeclaresItsGroupAndTheRecordedCatalogKeepsIt() throws {
        let configuration = try NonRenewingConfigurationTests.parse(
            #"{"y": {"type": "subscription", "entitlements": ["pro"], "period": "P1Y", "group": "21000001"}}"#)
        #expect(configuration.catalog.products["y"]?.group == "21000001")
        let json = configuration.catalog.canonicalJSON()
        #expect(try Catalog(canonicalJSON: JSONValue.parse(json)) == configuration.catalog)
        #expect(String(decoding: json, as: UTF8.self).contains(#""period":"P1Y","group":"21000001"}"#))
    }

    @Test(arguments: [
        (
            #"{"p": {"type": "non-consumable", "group": "21000001"}}"#,
            "apps[0].products.p.group: only a subscription belongs to a subscription group"
        ),
        (
            #"{"p": {"type": "subscription", "group": ""}}"#,
            "apps[0].products.p.group: expected the subscription group's id"
        ),
        (#"{"p": {"type": "subscription", "group": 21000001}}"#, "apps[0].products.p.group: expected a string"),
    ])
    func aWrongGroupNamesTheKeyAndTheFile(products: String, message: String) {
        #expect {
            _ = try NonRenewingConfigurationTests.parse(products)
        } throws: { error in
            "\(error)".hasPrefix("c.json: " + message)
        }
    }
}

/// Per app, `"commission": "standard" | "small-business"` (api.md §1): the program of the
/// proceeds estimate (§3.1, `analytics.revenue_movements`).
@Suite struct CommissionConfigurationTests {
    static func parse(_ commission: String) throws(ConfigurationError) -> Configuration {
        let text = #"{"apps": [{"bundleId": "b", "environments": ["Sandbox"], "commission": \#(commission)}]}"#
        return try Configuration.parse(Array(text.utf8), file: "c.json", baseDirectory: ".")
    }

    @Test func standardByDefaultSmallBusinessWhenSaid() throws {
        let plain = try Configuration.parse(
            Array(#"{"apps": [{"bundleId": "b", "environments": ["Sandbox"]}]}"#.utf8), file: "c.json",
            baseDirectory: ".")
        #expect(plain.apps[0].commission == .standard)
        #expect(try Self.parse(#""small-business""#).apps[0].commission == .smallBusiness)
        #expect(try Self.parse(#""standard""#).apps[0].commission == .standard)
    }

    @Test(arguments: [
        (#""small""#, #"apps[0].commission: unknown commission program "small" (expected standard or small-business)"#),
        ("15", "apps[0].commission: expected a string"),
    ])
    func anythingElseNamesTheKeyAndTheFile(commission: String, message: String) {
        #expect {
            _ = try Self.parse(commission)
        } throws: { error in
            "\(error)".hasPrefix("c.json: " + message)
        }
    }
}
