import AppStore
import EventStore
import Foundation
import JSON
import Ledger
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Replay
@testable import Service

/// One catalog in force (docs/api.md §1.1): the catalog is recorded in the event log, every instance
/// on the database answers under the newest version, and nothing that forgets or predates the
/// config (a replay, a serve without --config, an instance on an old config) changes an answer.
@Suite(.serialized, .tags(.database)) struct CatalogInForceTests {
    /// The old catalog is the test config's; the new one has "remove ads" grant "premium".
    static func newConfiguration() -> Configuration {
        var configuration = TestService.configuration()
        configuration.apps[0].products[TestService.removeAds]?.entitlements = ["premium"]
        return configuration
    }

    /// The same new catalog as a config file, for the CLI (`removeAds`: what "remove ads" grants;
    /// "no_ads" makes it the old catalog).
    static func newConfigFile(removeAds: String = "premium") throws -> String {
        let directory = try OpsBinary.temporaryDirectory()
        let path = directory + "/catalog-\(removeAds).json"
        let json: JSONValue = .object([
            "apps": .array([
                .object([
                    "bundleId": .string(TestService.bundleId), "appAppleId": .int(TestVectors.appAppleId),
                    "environments": .array([.string("Sandbox"), .string("Production")]),
                    "products": .object([
                        TestService.coins: .object(["type": "consumable", "grants": .object(["coins": .int(100)])]),
                        TestService.monthly: .object(["type": "subscription", "entitlements": .array(["pro"])]),
                        TestService.yearly: .object(["type": "subscription", "entitlements": .array(["pro"])]),
                        TestService.removeAds: .object([
                            "type": "non-consumable", "entitlements": .array([.string(removeAds)]),
                        ]),
                    ]),
                ])
            ])
        ])
        try Data(json.serialized()).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A subscriber, a coins buyer and two owners of "remove ads" (the users a new rule for it changes).
    static func seed(_ service: TestService) throws {
        let client = service.client()
        let now = service.clock.now
        let purchases: [(String, [String: JSONValue])] = [
            (
                "u-sub",
                Mint.transaction(
                    "8100001", product: TestService.monthly, purchase: now - day, expires: now + 20 * day,
                    signed: now - day)
            ),
            (
                "u-coins",
                Mint.transaction(
                    "8100002", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                    signed: now - day)
            ),
            (
                "u-ads",
                Mint.transaction(
                    "8100003", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day,
                    expires: nil, signed: now - day)
            ),
            (
                "u-ads-2",
                Mint.transaction(
                    "8100004", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day,
                    expires: nil, signed: now - day)
            ),
        ]
        for (user, fields) in purchases {
            let response = try client.purchase(user, Mint.signed(fields))
            #expect(response.status == 200, "\(user): \(response.text)")
        }
    }

    static func documents(_ conninfo: String) throws -> [String: String] {
        let rows = try Connection(conninfo).query("SELECT user_id, document FROM proj.users")
        var documents: [String: String] = [:]
        for row in 0..<rows.count { documents[rows[row, 0]!] = rows[row, 1]! }
        return documents
    }

    static func catalogHead(_ conninfo: String) throws -> Int64 {
        try Connection(conninfo).query(
            "SELECT coalesce(max(version), 0) AS v FROM es.events WHERE stream_id = 'catalog'"
        )
        .int64(0, "v") ?? -1
    }

    /// The answers that tell which catalog rendered them.
    static func expectOldCatalog(_ client: ServiceHTTPClient, _ context: String) throws {
        let sub = try client.user("u-sub")
        #expect(sub["entitlements"]?["pro"]?["active"]?.boolValue == true, "\(context): \(sub)")
        #expect(sub["entitlements"]?[TestService.monthly] == nil, "\(context): \(sub)")
        #expect(try client.user("u-coins")["balances"]?["coins"]?.int64Value == 100, "\(context)")
        let ads = try client.user("u-ads")
        #expect(ads["entitlements"]?["no_ads"]?["active"]?.boolValue == true, "\(context): \(ads)")
        #expect(ads["entitlements"]?["premium"] == nil, "\(context): \(ads)")
    }

    static func expectNewCatalog(_ client: ServiceHTTPClient, _ user: String, _ context: String) throws {
        let ads = try client.user(user)
        #expect(ads["entitlements"]?["premium"]?["active"]?.boolValue == true, "\(context): \(ads)")
        #expect(ads["entitlements"]?["no_ads"] == nil, "\(context): \(ads)")
    }

    // MARK: Recorded, not configured

    @Test func theFirstServeRecordsItsCatalogAndTheSameConfigRecordsNothingMore() throws {
        let first = try TestService()
        defer { first.stop() }
        let version = first.app.service.catalogs.current
        #expect(version.version == 1)
        #expect(version.catalog == TestService.configuration().catalog)
        #expect(version.hash == AppStore.Digest.sha256Hex(TestService.configuration().catalog.canonicalJSON()))
        #expect(version.hash.count == 64)
        let again = try TestService(sharing: first)
        defer { again.stop() }
        #expect(try Self.catalogHead(first.conninfo) == 1)
        #expect(again.app.service.catalogs.current.version == 1)
    }

    @Test func aReplayWithoutConfigChangesNoAnswer() throws {
        let service = try TestService()
        defer { service.stop() }
        try Self.seed(service)
        let before = try Self.documents(service.conninfo)
        // As the README shows it: no --config.
        let outcome = try OpsBinary.run(["replay"], environment: ["DATABASE_URL": service.conninfo])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("changed users: 0"), "\(outcome.stdout)")
        #expect(outcome.stderr.contains("catalog version 1 in force"), "\(outcome.stderr)")
        #expect(Set(try Self.documents(service.conninfo).keys) == Set(before.keys))
        try Self.expectOldCatalog(service.client(), "after replay without --config")
    }

    @Test func aServeWithoutConfigServesAndReplaysUnderTheRecordedCatalog() throws {
        let configured = try TestService()
        defer { configured.stop() }
        try Self.seed(configured)
        let before = try Self.documents(configured.conninfo)
        // A serve that forgot --config: no products of its own.
        var empty = Configuration.empty
        empty.trustedRootsDER = [TestVectors.shared.rootDER]
        let forgotten = try TestService(configuration: empty, sharing: configured)
        defer { forgotten.stop() }
        #expect(try Self.catalogHead(configured.conninfo) == 1)  // it recorded nothing
        try Self.expectOldCatalog(forgotten.client(), "serve without --config")
        let replay = try forgotten.client().post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200)
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.json)")
        #expect(try Self.documents(configured.conninfo) == before)
        try Self.expectOldCatalog(configured.client(), "after a replay by a serve without --config")
    }

    // MARK: A new catalog

    @Test func catalogDiffNamesExactlyTheUsersAChangeAffectsAndChangesNothing() throws {
        let service = try TestService()
        defer { service.stop() }
        try Self.seed(service)
        let before = try Self.documents(service.conninfo)
        let file = try Self.newConfigFile()
        let outcome = try OpsBinary.run(
            ["catalog", "diff", "--config", file, "--json"], environment: ["DATABASE_URL": service.conninfo])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let report = try JSONValue.parse(outcome.stdout)
        let changed = report["changedUsers"]?.arrayValue ?? []
        #expect(Set(changed.compactMap { $0["userId"]?.stringValue }) == ["u-ads", "u-ads-2"], "\(report)")
        #expect(report["changedUserCount"]?.int64Value == 2)
        #expect(report["users"]?.int64Value == 4)
        #expect(report["config"]?["serve"]?.stringValue == "record")
        #expect(report["inForce"]?["version"]?.int64Value == 1)
        let ads = try #require(changed.first { $0["userId"]?.stringValue == "u-ads" })
        #expect(ads["fields"]?.arrayValue == [.string("entitlements")])
        #expect(ads["before"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(ads["after"]?["entitlements"]?["premium"]?["active"]?.boolValue == true)
        // A dry run: nothing recorded, nothing re-rendered.
        #expect(try Self.catalogHead(service.conninfo) == 1)
        #expect(try Self.documents(service.conninfo) == before)

        let show = try OpsBinary.run(["catalog", "show"], environment: ["DATABASE_URL": service.conninfo])
        #expect(show.status == 0, "\(show.stderr)")
        let shown = try JSONValue.parse(show.stdout)
        #expect(shown["version"]?.int64Value == 1)
        #expect(shown["hash"]?.stringValue == service.app.service.catalogs.current.hash)
        #expect(shown["recordedAt"]?.stringValue.flatMap(RFC3339.parse) != nil)
        #expect(shown["catalog"]?["products"]?[TestService.removeAds]?["entitlements"] == .array(["no_ads"]))
    }

    /// A long transaction anywhere in the cluster holds the xid horizon back: the diff still
    /// folds every committed event (seen in CI, where another test's open transaction hid them all).
    @Test func catalogDiffSeesUsersWrittenBehindALongTransactionElsewhere() throws {
        let service = try TestService()
        defer { service.stop() }
        let blocker = try Connection(service.conninfo)
        try blocker.executeScript("BEGIN")
        _ = try blocker.query("SELECT pg_current_xact_id()")
        defer { try? blocker.executeScript("ROLLBACK") }
        try Self.seed(service)
        let outcome = try OpsBinary.run(
            ["catalog", "diff", "--config", try Self.newConfigFile(), "--json"],
            environment: ["DATABASE_URL": service.conninfo])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let report = try JSONValue.parse(outcome.stdout)
        let changed = report["changedUsers"]?.arrayValue ?? []
        #expect(Set(changed.compactMap { $0["userId"]?.stringValue }) == ["u-ads", "u-ads-2"], "\(report)")
    }

    @Test func serveWithANewCatalogRecordsItAndReRendersExactlyTheUsersItChanges() throws {
        let old = try TestService()
        defer { old.stop() }
        try Self.seed(old)
        let before = try Self.documents(old.conninfo)
        let beforeTx = try Connection(old.conninfo).query("SELECT user_id, changed_tx::text FROM proj.users")
        let newer = try TestService(configuration: Self.newConfiguration(), sharing: old)
        defer { newer.stop() }
        #expect(try Self.catalogHead(old.conninfo) == 2)
        #expect(newer.app.service.catalogs.current.version == 2)
        // Stored before the new instance served a single request: those users and no one else.
        let after = try Self.documents(old.conninfo)
        let changed = Set(after.keys.filter { after[$0] != before[$0] })
        #expect(changed == ["u-ads", "u-ads-2"])
        let afterTx = try Connection(old.conninfo).query("SELECT user_id, changed_tx::text FROM proj.users")
        var rewritten: Set<String> = []
        for row in 0..<afterTx.count {
            let user = afterTx[row, 0]!
            let previous = (0..<beforeTx.count).first { beforeTx[$0, 0] == user }.flatMap { beforeTx[$0, 1] }
            if previous != afterTx[row, 1] { rewritten.insert(user) }
        }
        #expect(rewritten == ["u-ads", "u-ads-2"])
        try Self.expectNewCatalog(newer.client(), "u-ads", "new instance")
        // Its config recorded, with the hash of the canonical catalog.
        #expect(newer.app.service.catalogs.current.hash == CatalogVersions.hash(Self.newConfiguration().catalog))
        #expect(newer.log.text.contains("catalog version recorded"))
    }

    @Test func aRunningInstanceSwitchesWithinASecond() throws {
        let old = try TestService()
        defer { old.stop() }
        try Self.seed(old)
        #expect(old.app.service.catalogs.current.version == 1)
        let newer = try TestService(configuration: Self.newConfiguration(), sharing: old)
        defer { newer.stop() }
        let recorded = Date()  // after the recording committed (inside the new instance's start)
        // Nothing is asked of the old instance: its poll finds the new version.
        try? eventually("the old instance to switch to version 2", within: 5, every: 0.01) {
            old.app.service.catalogs.current.version >= 2
        }
        #expect(old.app.service.catalogs.current.version == 2)
        #expect(Date().timeIntervalSince(recorded) < 1.0)
        try Self.expectNewCatalog(old.client(), "u-ads", "running old instance")
    }

    @Test func anInstanceOnTheOldConfigNeverAnswersWithIt() throws {
        let old = try TestService()
        defer { old.stop() }
        try Self.seed(old)
        // Its poll stopped, so it is certain to still hold version 1 when the new one is recorded.
        old.app.jobs.stop(named: "catalog-in-force")
        let newer = try TestService(configuration: Self.newConfiguration(), sharing: old)
        defer { newer.stop() }
        #expect(old.app.service.catalogs.current.version == 1)
        // The instance still running on the old config: its stored answers were re-rendered, and
        // its writes are redone under the version in force (they cannot store the old catalog).
        try Self.expectNewCatalog(old.client(), "u-ads", "running old instance, re-rendered user")
        let now = old.clock.now
        let bought = try old.client().purchase(
            "u-ads-3",
            Mint.signed(
                Mint.transaction(
                    "8100005", product: TestService.removeAds, type: "Non-Consumable", purchase: now - hour,
                    expires: nil,
                    signed: now - hour)))
        #expect(bought.status == 200)
        #expect(bought.json["customer"]?["entitlements"]?["premium"]?["active"]?.boolValue == true, "\(bought.json)")
        try Self.expectNewCatalog(old.client(), "u-ads-3", "purchase through the old instance")
        try Self.expectNewCatalog(newer.client(), "u-ads-3", "purchase through the old instance, read by the new")
        #expect(old.app.service.catalogs.current.version == 2)  // the refused write reloaded it
        let debit = try old.client().debit("u-coins", "coins", amount: 1, key: "after-switch")
        #expect(debit.status == 200)

        // An instance started afterwards on the old config: warns, records nothing, serves the newest.
        let restarted = try TestService(sharing: old)
        defer { restarted.stop() }
        #expect(try Self.catalogHead(old.conninfo) == 2)
        #expect(restarted.app.service.catalogs.current.version == 2)
        #expect(restarted.log.text.contains("older catalog version"), "\(restarted.log.text)")
        try Self.expectNewCatalog(restarted.client(), "u-ads", "instance started on the old config")
        try Self.expectNewCatalog(restarted.client(), "u-ads-2", "instance started on the old config")
    }

    @Test func catalogRecordIsTheWayBackToAnOlderVersion() throws {
        let old = try TestService()
        defer { old.stop() }
        try Self.seed(old)
        let newer = try TestService(configuration: Self.newConfiguration(), sharing: old)
        defer { newer.stop() }
        try Self.expectNewCatalog(newer.client(), "u-ads", "version 2")
        let outcome = try OpsBinary.run(
            ["catalog", "record", "--config", try Self.newConfigFile(removeAds: "no_ads")],
            environment: ["DATABASE_URL": old.conninfo])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("recorded catalog version 3"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("re-rendered 2 users"), "\(outcome.stdout)")
        #expect(try Self.catalogHead(old.conninfo) == 3)
        // The re-rendered documents are what both running instances answer at once.
        try Self.expectOldCatalog(newer.client(), "after catalog record, new instance")
        try Self.expectOldCatalog(old.client(), "after catalog record, old instance")
        // The running instances publish the version they switched to for analysts.
        func published() throws -> String? {
            try Connection(old.conninfo).query(
                "SELECT array_to_string(entitlements, ',') AS e FROM analytics.products WHERE product_id = $1",
                [TestService.removeAds])[0, "e"]
        }
        try? eventually("no_ads published", within: 5) { try published() == "no_ads" }
        #expect(try published() == "no_ads")
        // Recording it again changes nothing.
        let again = try OpsBinary.run(
            ["catalog", "record", "--config", try Self.newConfigFile(removeAds: "no_ads")],
            environment: ["DATABASE_URL": old.conninfo])
        #expect(again.stdout.contains("nothing recorded"), "\(again.stdout)")
        #expect(try Self.catalogHead(old.conninfo) == 3)
    }

    @Test func asOfBeforeTheChangeAnswersWithTheOldCatalog() throws {
        let old = try TestService()
        defer { old.stop() }
        try Self.seed(old)
        // The instant the purchase was recorded: the old catalog was in force then.
        let purchasedAt = try #require(
            try Connection(old.conninfo).query(
                "SELECT floor(extract(epoch FROM max(recorded_at)) * 1000)::bigint AS at FROM es.events WHERE stream_id <> 'catalog'"
            ).int64(0, "at"))
        let newer = try TestService(configuration: Self.newConfiguration(), sharing: old)
        defer { newer.stop() }
        let recordedAt = try #require(newer.app.service.catalogs.current.recordedAt)
        #expect(recordedAt > purchasedAt)
        for client in [newer.client(), old.client()] {
            let then = try client.user("u-ads", asOf: purchasedAt)
            #expect(then["entitlements"]?["no_ads"]?["active"]?.boolValue == true, "\(then)")
            #expect(then["entitlements"]?["premium"] == nil, "\(then)")
            let later = try client.user("u-ads", asOf: recordedAt)
            #expect(later["entitlements"]?["premium"]?["active"]?.boolValue == true, "\(later)")
        }
    }

    @Test func aReplayStartedUnderTheOldCatalogDoesNotSwapItBackIn() throws {
        let old = try TestService()
        defer { old.stop() }
        try Self.seed(old)
        let started = Mutex<TestService?>(nil)
        defer { started.withLock { $0?.stop() } }
        var options = ReplayOptions()
        // While the replay has rendered everything under version 1, a new version is recorded.
        options.beforeCatchUp = {
            let newer = try? TestService(configuration: Self.newConfiguration(), sharing: old)
            started.withLock { $0 = newer }
        }
        #expect {
            try old.app.projections.engine.run(options)
        } throws: { error in
            guard case ServiceError.busy(let message) = error else { return false }
            return message.contains("new catalog version")
        }
        #expect(started.withLock { $0 != nil })
        #expect(try Self.catalogHead(old.conninfo) == 2)
        try Self.expectNewCatalog(old.client(), "u-ads", "after the refused swap")
        try Self.expectNewCatalog(old.client(), "u-ads-2", "after the refused swap")
        // Run again, it renders under the version in force and changes nothing.
        let again = try old.app.projections.engine.run(ReplayOptions())
        #expect(again.swapped && again.changedUsers.isEmpty, "\(again.changedUsers)")
        try Self.expectNewCatalog(old.client(), "u-ads", "after the second replay")
    }

    @Test(arguments: [
        (["catalog"], "usage: iap-ledger catalog"),
        (["catalog", "list"], "unknown catalog subcommand \"list\""),
        (["catalog", "diff"], "catalog diff needs --config FILE"),
        (["catalog", "show", "--config", "x.json"], "catalog show takes no --config"),
        (
            ["catalog", "diff", "--config", "/nonexistent/config.json"],
            "/nonexistent/config.json: cannot read the file"
        ),
    ])
    func catalogBadInputIsOneLineNamingTheCause(arguments: [String], expected: String) throws {
        // Refused before any database is looked for (this one does not exist).
        let outcome = try OpsBinary.run(
            arguments, environment: ["DATABASE_URL": "host=127.0.0.1 port=1 dbname=x connect_timeout=1"])
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains(expected), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("PostgreSQL") && !outcome.stderr.contains("connect"), "\(outcome.stderr)")
    }

    @Test func catalogDiffOfAConfigWithoutProductsIsRefused() throws {
        let directory = try OpsBinary.temporaryDirectory()
        let path = directory + "/no-products.json"
        try Data(#"{"apps": [{"bundleId": "com.example.x", "environments": ["Sandbox"]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        let outcome = try OpsBinary.run(
            ["catalog", "diff", "--config", path],
            environment: ["DATABASE_URL": "host=127.0.0.1 port=1 dbname=x connect_timeout=1"])
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("configures no products"), "\(outcome.stderr)")
        #expect(try OpsBinary.run(["catalog", "--help"]).stdout.contains("usage: iap-ledger catalog show"))
    }

    // MARK: The rule, pure

    @Test func theRecordingRule() {
        let old = TestService.configuration().catalog
        let new = Self.newConfiguration().catalog
        func version(_ number: Int64, _ catalog: Catalog) -> CatalogVersion {
            CatalogVersion(
                version: number, catalog: catalog, hash: CatalogVersions.hash(catalog), source: nil, recordedAt: number)
        }
        #expect(CatalogRecorder.decide(configured: old, recorded: []) == .record)
        #expect(CatalogRecorder.decide(configured: Catalog(), recorded: []) == .useRecorded)
        #expect(CatalogRecorder.decide(configured: Catalog(), recorded: [version(1, old)]) == .useRecorded)
        #expect(CatalogRecorder.decide(configured: old, recorded: [version(1, old)]) == .unchanged)
        #expect(CatalogRecorder.decide(configured: new, recorded: [version(1, old)]) == .record)
        #expect(
            CatalogRecorder.decide(configured: old, recorded: [version(1, old), version(2, new)]) == .older(version: 1))
        // The hash does not depend on the order of the config file.
        var reordered = Catalog()
        for id in old.products.keys.sorted().reversed() { reordered.products[id] = old.products[id] }
        #expect(CatalogVersions.hash(reordered) == CatalogVersions.hash(old))
        #expect(CatalogVersions.hash(new) != CatalogVersions.hash(old))
        let decoded = try? Catalog(canonicalJSON: JSONValue.parse(old.canonicalJSON()))
        #expect(decoded == old)
        // asOf: the newest recorded at or before the instant; before the first, the first.
        let versions = [version(1, old), version(2, new)]
        #expect(CatalogVersions.inForce(at: 0, among: versions).version == 1)
        #expect(CatalogVersions.inForce(at: 1, among: versions).version == 1)
        #expect(CatalogVersions.inForce(at: 2, among: versions).version == 2)
        #expect(CatalogVersions.inForce(at: 5, among: []).version == 0)
    }
}
