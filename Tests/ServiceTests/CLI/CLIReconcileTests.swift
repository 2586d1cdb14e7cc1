import AppStore
import Foundation
import JSON
import TestSupport
import Testing

/// `iap-ledger reconcile` (api.md §1, §5) as an operator runs it: the real binary, a real
/// PostgreSQL shared with a running service, and the stand-in of Apple's Server API (which
/// checks every token as Apple does).
@Suite(.tags(.database)) struct CLIReconcileTests {
    /// A config trusting the test root with the test app's serverAPI key pointed at `production`
    /// and `sandbox` (no serverAPI block when both are nil).
    static func configuration(in directory: String, production: String?, sandbox: String?) throws -> String {
        try Data(TestVectors.shared.rootDER).write(to: URL(fileURLWithPath: directory + "/root.der"))
        var serverAPI = ""
        if let production, let sandbox {
            serverAPI = """
                , "serverAPI": {"issuerId": "issuer-test", "keyId": "KEYTEST123", "privateKeyFile": "\(SyncTests.keyPath)",
                                "baseURLs": {"Production": "\(production)", "Sandbox": "\(sandbox)"}}
                """
        }
        let file = directory + "/config.json"
        try """
        {"apps": [{"bundleId": "\(TestVectors.bundleId)", "appAppleId": \(TestVectors.appAppleId),
                   "environments": ["Sandbox", "Production"]\(serverAPI)}],
         "trustedRoots": ["root.der"], "reconcile": {"intervalSeconds": 0}}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func notificationsThatNeverArrivedAreRecordedAndASecondRunFindsOnlyDuplicates() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        apple.production.setPageSizes(notifications: 2)
        let delivered = ReconcileTests.notification("5200001")
        for jws in [delivered, ReconcileTests.notification("5200002"), ReconcileTests.notification("5200003")] {
            apple.production.addNotification(jws)
        }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client()
        #expect(try api.notify(delivered).json["result"]?.stringValue == "recorded")
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try Self.configuration(
            in: root, production: apple.productionURL.absoluteString, sandbox: apple.sandboxURL.absoluteString)

        let first = try OpsBinary.run(
            ["reconcile", "--config", config], environment: ["DATABASE_URL": service.conninfo])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderrLines.first?.hasPrefix("iap-ledger: using DATABASE_URL") == true, "\(first.stderr)")
        #expect(first.stdout.contains("fetched 3, recorded 2, duplicates 1, rejected 0"), "\(first.stdout)")
        #expect(first.stdout.split(separator: "\n").count == 1, "one line a person reads: \(first.stdout)")
        let asked = apple.production.requests.filter { $0.path == "/inApps/v1/notifications/history" }
        #expect(asked.count == 2, "every page")
        #expect(asked.allSatisfy { $0.status == 200 && $0.authorization?.hasPrefix("Bearer ") == true })
        // Recorded as the notification endpoint records them: the running service sees the chains.
        for id in ["5200002", "5200003"] {
            let chain = try api.get("/v1/subscriptions/\(id)")
            #expect(chain.status == 200, "\(id) \(chain.text)")
        }

        // Again, the config from IAP_LEDGER_CONFIG and a window of its own: nothing new.
        let since = RFC3339.format(TestVectors.nowMillis - 3_600_000)
        let sandboxAsked = apple.sandbox.requests.count
        #expect(sandboxAsked == 1, "without --environment, every store environment the app accepts")
        let again = try OpsBinary.run(
            [
                "reconcile", "--since", since, "--environment", "Production", "--bundle-id", TestVectors.bundleId,
                "--json",
            ],
            environment: ["DATABASE_URL": service.conninfo, "IAP_LEDGER_CONFIG": config])
        #expect(again.status == 0, "\(again.stderr)")
        let report = try JSONValue.parse(again.stdout)
        #expect(report["fetched"]?.int64Value == 3)
        #expect(report["recorded"]?.int64Value == 0)
        #expect(report["duplicates"]?.int64Value == 3)
        #expect(report["rejected"]?.int64Value == 0)
        #expect(report["since"]?.stringValue.flatMap(RFC3339.parse) == RFC3339.parse(since))
        #expect(apple.sandbox.requests.count == sandboxAsked, "--environment Production asks Production only")
    }

    @Test(arguments: [
        (["--since", "yesterday"], "--since must be an RFC 3339 time such as 2026-12-01T00:00:00Z, got \"yesterday\""),
        (["--until", "2026-13-01T00:00:00Z"], "--until must be an RFC 3339 time"),
        (
            [
                "--since", RFC3339.format(TestVectors.nowMillis - 3_600_000), "--until",
                RFC3339.format(TestVectors.nowMillis - 7_200_000),
            ],
            "must be before --until"
        ),
        (
            ["--since", RFC3339.format(TestVectors.nowMillis - 200 * 86_400_000)],
            "--since must be within the last 180 days"
        ),
        (["--environment", "Xcode"], "--environment must be Production or Sandbox, got \"Xcode\""),
        (["--bundle-id", "com.other.app"], "--bundle-id com.other.app is not an app of"),
        (["--window", "1h"], "unknown option --window"),
        (["now"], "reconcile takes no argument"),
    ])
    func aBadArgumentIsOneLineAndExitTwoBeforeAnyDatabase(arguments: [String], expected: String) throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try Self.configuration(
            in: root, production: "http://127.0.0.1:9/p", sandbox: "http://127.0.0.1:9/s")
        let outcome = try OpsBinary.run(["reconcile", "--config", config, "--data-dir", root + "/data"] + arguments)
        Self.expectUsageLine(outcome, containing: expected)
        #expect(!FileManager.default.fileExists(atPath: root + "/data"), "no cluster looked for, none created")
    }

    @Test func withoutAServerAPIKeyOrAConfigItSaysSoAndExitsTwo() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try Self.configuration(in: root, production: nil, sandbox: nil)
        let unkeyed = try OpsBinary.run(["reconcile", "--config", config, "--data-dir", root + "/data"])
        Self.expectUsageLine(unkeyed, containing: "no app has a serverAPI key in \(config)")
        let unkeyedApp = try OpsBinary.run(
            ["reconcile", "--bundle-id", TestVectors.bundleId, "--data-dir", root + "/data"],
            environment: ["IAP_LEDGER_CONFIG": config])
        Self.expectUsageLine(unkeyedApp, containing: "app \(TestVectors.bundleId) has no serverAPI key in \(config)")
        let noConfig = try OpsBinary.run(["reconcile", "--data-dir", root + "/data"])
        Self.expectUsageLine(noConfig, containing: "reconcile needs --config FILE (or IAP_LEDGER_CONFIG)")
    }

    @Test func withoutADatabaseItSaysWhereItLookedAndCreatesNone() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try Self.configuration(
            in: root, production: "http://127.0.0.1:9/p", sandbox: "http://127.0.0.1:9/s")
        let outcome = try OpsBinary.run(["reconcile", "--config", config, "--data-dir", root + "/data"])
        CLIBadInputTests.expectOneLineFailure(outcome, containing: ["no database", root + "/data"])
        #expect(!FileManager.default.fileExists(atPath: root + "/data/pgdata"), "never creates a cluster")
    }

    @Test func withAppleUnreachableItSaysSoInOneLineAndRecordsNothing() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try Self.configuration(
            in: root, production: "http://127.0.0.1:9/p", sandbox: "http://127.0.0.1:9/s")
        let outcome = try OpsBinary.run(["reconcile", "--config", config], environment: ["DATABASE_URL": conninfo])
        #expect(outcome.status == 1, "\(outcome.stderr)")
        #expect(outcome.stdout.isEmpty)
        #expect(outcome.stderrLines.count == 2, "which database, then the failure: \(outcome.stderr)")
        #expect(
            outcome.stderrLines.last?.hasPrefix("iap-ledger reconcile: Apple's App Store Server API is unavailable")
                == true,
            "\(outcome.stderr)")
        CLIBadInputTests.expectNoCrash(outcome)
    }

    @Test func helpWorks() throws {
        let outcome = try OpsBinary.run(["reconcile", "--help"])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.hasPrefix("usage: iap-ledger reconcile"), "\(outcome.stdout)")
        let top = try OpsBinary.run(["--help"])
        #expect(top.stdout.contains("reconcile [--config FILE] [--since T]"))
    }

    static func expectUsageLine(
        _ outcome: OpsBinary.Outcome, containing expected: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(outcome.status == 2, "\(outcome.stderr)", sourceLocation: sourceLocation)
        #expect(outcome.stderrLines.count == 1, "\(outcome.stderr)", sourceLocation: sourceLocation)
        #expect(outcome.stderr.hasPrefix("iap-ledger reconcile: "), "\(outcome.stderr)", sourceLocation: sourceLocation)
        #expect(
            outcome.stderr.contains(expected), "\"\(expected)\" missing from: \(outcome.stderr)",
            sourceLocation: sourceLocation)
        #expect(outcome.stdout.isEmpty, sourceLocation: sourceLocation)
        CLIBadInputTests.expectNoCrash(outcome, sourceLocation: sourceLocation)
    }
}
