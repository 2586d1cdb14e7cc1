import EventStore
import Foundation
import Testing

@testable import CLI
@testable import Service

/// The one loader of serve's settings (`ServiceSettings.load`): flags and an environment given
/// as values, no process and no database. The expected figures are written out here, not read
/// from the table, so a changed default or range fails.
struct ServiceSettingsTests {
    static let app = #"{"bundleId": "com.example.settings", "appAppleId": 4321, "environments": ["Sandbox"]}"#

    /// A config file with one app, removed by the caller.
    static func configFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString).json")
            .path
        try Data(#"{"apps": [\#(app)]}"#.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func refusal(flags: [String: String] = [:], environment: [String: String] = [:]) -> String? {
        do {
            _ = try ServiceSettings.load(flags: flags, environment: environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func nothingGivenIsEveryDefault() throws {
        let options = try ServiceSettings.load(flags: [:], environment: [:])
        #expect(options.configurationPath == nil)
        #expect(options.configuration.apps.isEmpty)
        #expect(options.port == 8080)
        #expect(options.host == "127.0.0.1")
        #expect(options.dataDirectory == "./.iap-ledger")
        #expect(options.threads == 32)
        #expect(options.httpWorkers == 4)
        #expect(options.databaseConnections == 8)
        #expect(options.databaseURL == nil)
        #expect(options.databasePoolMode == .session)
        #expect(options.databaseReadURL == nil)
        #expect(options.replicaWaitMillis == 100)
        #expect(options.keyCacheMillis == 30 * 1000)
        #expect(options.userCacheBytes == 32 * 1024 * 1024)
        #expect(options.ingestCommitters == 2)
        #expect(options.ingestBatchMax == 16)
        #expect(options.drainSeconds == 0)
        #expect(options.instanceName == nil)
    }

    /// Every variable of the table, each with a value other than its default.
    @Test func everyVariableIsRead() throws {
        let config = try Self.configFile()
        defer { try? FileManager.default.removeItem(atPath: config) }
        let environment = [
            "IAP_LEDGER_CONFIG": config, "PORT": "9091", "IAP_LEDGER_HOST": "0.0.0.0",
            "DATABASE_URL": "postgresql://a@primary/x", "DATABASE_POOL_MODE": "transaction",
            "DATABASE_READ_URL": "postgresql://a@replica/x", "IAP_LEDGER_REPLICA_WAIT_MS": "250",
            "IAP_LEDGER_KEY_CACHE_SECONDS": "7", "IAP_LEDGER_USER_CACHE_MB": "3",
            "IAP_LEDGER_INGEST_COMMITTERS": "0", "IAP_LEDGER_INGEST_BATCH_MAX": "5",
            "IAP_LEDGER_DRAIN_SECONDS": "12", "IAP_LEDGER_INSTANCE": "node-2",
        ]
        // A variable added to the table without a line here fails.
        #expect(Set(environment.keys) == Set(ServiceSettings.serve.compactMap(\.variable)))
        let options = try ServiceSettings.load(flags: [:], environment: environment)
        #expect(options.configurationPath == config)
        #expect(options.configuration.apps.map(\.bundleId) == ["com.example.settings"])
        #expect(options.port == 9091)
        #expect(options.host == "0.0.0.0")
        #expect(options.databaseURL == "postgresql://a@primary/x")
        #expect(options.databasePoolMode == .transaction)
        #expect(options.databaseReadURL == "postgresql://a@replica/x")
        #expect(options.replicaWaitMillis == 250)
        #expect(options.keyCacheMillis == 7000)
        #expect(options.userCacheBytes == 3_145_728)  // 3 × 1 048 576
        #expect(options.ingestCommitters == 0)
        #expect(options.ingestBatchMax == 5)
        #expect(options.drainSeconds == 12)
        #expect(options.instanceName == "node-2")
    }

    /// Every flag of the table, each with a value other than its default.
    @Test func everyFlagIsRead() throws {
        let config = try Self.configFile()
        defer { try? FileManager.default.removeItem(atPath: config) }
        let flags = [
            "config": config, "port": "0", "host": "::1", "data-dir": "/srv/iap", "threads": "3",
            "http-workers": "64", "db-connections": "256", "database-pool-mode": "transaction",
        ]
        #expect(Set(flags.keys) == ServiceSettings.serveFlags)
        let options = try ServiceSettings.load(flags: flags, environment: [:])
        #expect(options.configurationPath == config)
        #expect(options.configuration.apps.count == 1)
        #expect(options.port == 0)
        #expect(options.host == "::1")
        #expect(options.dataDirectory == "/srv/iap")
        #expect(options.threads == 3)
        #expect(options.httpWorkers == 64)
        #expect(options.databaseConnections == 256)
        #expect(options.databasePoolMode == .transaction)
    }

    @Test func aFlagWinsOverItsVariableAndAnEmptyVariableIsUnset() throws {
        let config = try Self.configFile()
        defer { try? FileManager.default.removeItem(atPath: config) }
        let options = try ServiceSettings.load(
            flags: ["port": "9092", "host": "10.0.0.1", "database-pool-mode": "session", "config": config],
            environment: [
                // Not even read under its flag: a bad PORT does not stop a --port.
                "PORT": "eighty", "IAP_LEDGER_HOST": "0.0.0.0", "DATABASE_POOL_MODE": "transaction",
                "IAP_LEDGER_CONFIG": "/nonexistent/config.json",
                "IAP_LEDGER_DRAIN_SECONDS": "", "IAP_LEDGER_INSTANCE": "",
            ])
        #expect(options.port == 9092)
        #expect(options.host == "10.0.0.1")
        #expect(options.databasePoolMode == .session)
        #expect(options.configurationPath == config)
        #expect(options.drainSeconds == 0)
        #expect(options.instanceName == nil)
    }

    /// All the bad settings in one line, in the table's order, each as it is given.
    @Test func everyBadSettingIsNamedInOneError() throws {
        let refusal = Self.refusal(
            flags: ["threads": "0", "http-workers": "many"],
            environment: [
                "PORT": "eighty", "DATABASE_POOL_MODE": "Transaction", "IAP_LEDGER_INGEST_BATCH_MAX": "0",
                "IAP_LEDGER_INSTANCE": "a\u{7}b",
                // Never read: the settings are refused first.
                "IAP_LEDGER_CONFIG": "/nonexistent/config.json",
            ])
        let expected = [
            #"PORT must be 0…65535, got "eighty""#,
            #"--threads must be 1…256, got "0""#,
            #"--http-workers must be 1…64, got "many""#,
            #"DATABASE_POOL_MODE must be session or transaction, got "Transaction""#,
            #"IAP_LEDGER_INGEST_BATCH_MAX must be 1…64, got "0""#,
            "IAP_LEDGER_INSTANCE must be 1…200 printable characters, got 3 characters",
        ]
        #expect(refusal == expected.joined(separator: "; "))
        #expect(refusal?.contains("\n") == false)
    }

    /// Each range's first refused value just past its edge, and the edge itself accepted.
    @Test(
        arguments: [
            ("port", nil, "65535", "65536", "0…65535"),
            ("threads", nil, "256", "257", "1…256"),
            ("http-workers", nil, "64", "65", "1…64"),
            ("db-connections", nil, "256", "257", "1…256"),
            (nil, "IAP_LEDGER_REPLICA_WAIT_MS", "10000", "10001", "0…10000"),
            (nil, "IAP_LEDGER_KEY_CACHE_SECONDS", "3600", "3601", "0…3600"),
            (nil, "IAP_LEDGER_USER_CACHE_MB", "65536", "65537", "0…65536"),
            (nil, "IAP_LEDGER_INGEST_COMMITTERS", "64", "65", "0…64"),
            (nil, "IAP_LEDGER_INGEST_BATCH_MAX", "64", "65", "1…64"),
            (nil, "IAP_LEDGER_DRAIN_SECONDS", "300", "301", "0…300"),
            (nil, "IAP_LEDGER_DRAIN_SECONDS", "0", "-1", "0…300"),
        ] as [(String?, String?, String, String, String)])
    func aRangeIsCheckedAtItsEdge(flag: String?, variable: String?, edge: String, past: String, rule: String) {
        func given(_ text: String) -> (flags: [String: String], environment: [String: String]) {
            (flag.map { [$0: text] } ?? [:], variable.map { [$0: text] } ?? [:])
        }
        let accepted = given(edge)
        #expect(Self.refusal(flags: accepted.flags, environment: accepted.environment) == nil)
        let refused = given(past)
        let source = flag.map { "--\($0)" } ?? variable ?? ""
        #expect(
            Self.refusal(flags: refused.flags, environment: refused.environment)
                == "\(source) must be \(rule), got \"\(past)\"")
    }

    @Test func anInstanceNameIsAtMost200PrintableCharacters() {
        #expect(Self.refusal(environment: ["IAP_LEDGER_INSTANCE": String(repeating: "n", count: 200)]) == nil)
        #expect(
            Self.refusal(environment: ["IAP_LEDGER_INSTANCE": String(repeating: "n", count: 201)])
                == "IAP_LEDGER_INSTANCE must be 1…200 printable characters, got 201 characters")
    }

    /// serve's usage and the top one are printed from the table: every flag and variable is in
    /// them, with its default.
    @Test func theUsageTextListsEverySetting() {
        for text in [ServiceSettings.serveUsage, CommandLineInterface.usage] {
            for flag in ServiceSettings.serveFlags { #expect(text.contains("--\(flag) "), "\(flag)") }
            for variable in ServiceSettings.serve.compactMap(\.variable) {
                #expect(text.contains(variable), "\(variable)")
            }
            #expect(text.contains("  --port N, PORT  (0…65535, default 8080)\n      the HTTP port (0: any free one)\n"))
            #expect(text.contains("  IAP_LEDGER_USER_CACHE_MB  (0…65536, default 32)\n"))
            #expect(text.contains("  --data-dir DIR  (default ./.iap-ledger)\n"))
        }
    }
}
