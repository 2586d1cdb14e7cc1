import AppStore
import Foundation
import Infrastructure
import Service
import TestSupport
import Testing

/// An app's `serverAPI` block (docs/api.md §5): read and checked at start-up, the key included,
/// so a mistake stops `serve` with one line naming the file and the key.
@Suite(.tags(.database)) struct ConfigurationServerAPITests {
    static let testKeyPath = TestVectors.fixtures.appendingPathComponent("test-pki/testSigningKey.p8").path

    /// A directory with the test `.p8` as `keys/SubscriptionKey.p8` and a P-384 key beside it.
    static func directory() throws -> String {
        let directory = try OpsBinary.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/keys", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: testKeyPath, toPath: directory + "/keys/SubscriptionKey.p8")
        try NotAppStoreKeys.p384PEM.write(toFile: directory + "/keys/p384.p8", atomically: true, encoding: .utf8)
        return directory
    }

    static func config(_ serverAPI: String) -> String {
        #"{"apps": [{"bundleId": "com.example", "appAppleId": 1234, "environments": ["Sandbox", "Production"], "serverAPI": \#(serverAPI)}]}"#
    }

    @Test func theKeyIsFoundBesideTheFileAndTheDefaultsAreApples() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.config(
            #"{"issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keyId": "2X9R4HXF34", "privateKeyFile": "keys/SubscriptionKey.p8"}"#
        )
        .write(toFile: directory + "/config.json", atomically: true, encoding: .utf8)
        let configuration = try Configuration.load(path: directory + "/config.json")
        let serverAPI = try #require(configuration.apps[0].serverAPI)
        #expect(serverAPI.issuerId == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(serverAPI.keyId == "2X9R4HXF34")
        #expect(serverAPI.privateKeyPath == directory + "/keys/SubscriptionKey.p8")
        #expect(serverAPI.productionURL == "https://api.storekit.apple.com")
        #expect(serverAPI.sandboxURL == "https://api.storekit-sandbox.apple.com")
        #expect(serverAPI.key.keyId == "2X9R4HXF34")
        // An app without the block has none.
        let plain = try Configuration.parse(
            Array(#"{"apps": [{"bundleId": "b", "environments": ["Sandbox"]}]}"#.utf8), file: "c.json",
            baseDirectory: ".")
        #expect(plain.apps[0].serverAPI == nil)
    }

    /// What the Service does with it: a client whose requests Apple (the stand-in) accepts.
    @Test func theConfiguredClientTalksToTheBaseURLs() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = try AppStoreServerKey.load(issuerId: "issuer-1", keyId: "KEY1", path: Self.testKeyPath)
        let apple = try AppleServerAPIStandIn(key: key)
        let jws = TestVectors.shared.signedTransaction(["transactionId": "8000000001"])
        apple.sandbox.addTransaction(jws)
        let text = Self.config(
            """
            {"issuerId": "issuer-1", "keyId": "KEY1", "privateKeyFile": "\(directory)/keys/SubscriptionKey.p8",
             "baseURLs": {"Production": "\(apple.productionURL.absoluteString)", "Sandbox": "\(apple.sandboxURL.absoluteString)"}}
            """)
        let configuration = try Configuration.parse(Array(text.utf8), file: "c.json", baseDirectory: "/nonexistent")
        let app = configuration.apps[0]
        let client = try #require(app.serverAPI).client(bundleId: app.bundleId)
        #expect(
            try client.transactionInfo("8000000001")
                == TransactionInfo(environment: .sandbox, signedTransactionInfo: jws))
        #expect(apple.production.requests.map(\.status) == [404])
    }

    @Test(arguments: [
        (#"{"keyId": "K", "privateKeyFile": "keys/SubscriptionKey.p8"}"#, "apps[0].serverAPI.issuerId", "is required"),
        (
            #"{"issuerId": " ", "keyId": "K", "privateKeyFile": "keys/SubscriptionKey.p8"}"#,
            "apps[0].serverAPI.issuerId", "must not be empty"
        ),
        (#"{"issuerId": "I", "privateKeyFile": "keys/SubscriptionKey.p8"}"#, "apps[0].serverAPI.keyId", "is required"),
        (#"{"issuerId": "I", "keyId": "K"}"#, "apps[0].serverAPI.privateKeyFile", "is required"),
        (
            #"{"issuerId": "I", "keyId": 7, "privateKeyFile": "keys/SubscriptionKey.p8"}"#, "apps[0].serverAPI.keyId",
            "expected a string"
        ),
        (
            #"{"issuerId": "I", "keyId": "K", "privateKeyFile": "keys/missing.p8"}"#,
            "apps[0].serverAPI.privateKeyFile", "cannot read"
        ),
        (
            #"{"issuerId": "I", "keyId": "K", "privateKeyFile": "keys/p384.p8"}"#, "apps[0].serverAPI.privateKeyFile",
            "not an EC P-256 key"
        ),
        (#"{"issuerId": "I", "keyId": "K", "privateKeyFile": "keys"}"#, "apps[0].serverAPI.privateKeyFile", "keys"),
        (
            #"{"issuerId": "I", "keyId": "K", "privateKeyFile": "keys/SubscriptionKey.p8", "baseURLs": {"Production": "api.storekit.apple.com"}}"#,
            "apps[0].serverAPI.baseURLs.Production", "http(s) URL"
        ),
        (
            #"{"issuerId": "I", "keyId": "K", "privateKeyFile": "keys/SubscriptionKey.p8", "baseURLs": {"Staging": "https://x"}}"#,
            "apps[0].serverAPI.baseURLs.Staging", "unknown key"
        ),
        (
            #"{"issuerId": "I", "keyId": "K", "privateKeyFile": "keys/SubscriptionKey.p8", "bundleId": "x"}"#,
            "apps[0].serverAPI.bundleId", "unknown key"
        ),
        (#""yes""#, "apps[0].serverAPI", "expected an object"),
    ])
    func aMistakeNamesTheFileAndTheKey(serverAPI: String, key: String, words: String) throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let text = Self.config(serverAPI)
        do {
            _ = try Configuration.parse(Array(text.utf8), file: "/etc/iap/config.json", baseDirectory: directory)
            Issue.record("accepted: \(serverAPI)")
        } catch {
            #expect(error.key == key, "\(error)")
            #expect(error.description.hasPrefix("/etc/iap/config.json: \(key): "), "\(error)")
            #expect(error.description.contains(words), "\(error)")
            #expect(!error.description.contains("\n"))
            #expect(!error.description.contains("PRIVATE KEY"), "key material never in a message")
        }
    }

    @Test func serveStopsWithOneLineNamingTheKeyFile() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/config.json"
        try Self.config(#"{"issuerId": "I", "keyId": "K", "privateKeyFile": "keys/p384.p8"}"#)
            .write(toFile: file, atomically: true, encoding: .utf8)
        let outcome = try OpsBinary.run(["serve", "--port", "0", "--config", file, "--data-dir", directory + "/data"])
        CLIBadInputTests.expectOneLineFailure(
            outcome, containing: [file, "apps[0].serverAPI.privateKeyFile", directory + "/keys/p384.p8", "P-256"])
        #expect(!FileManager.default.fileExists(atPath: directory + "/data"), "nothing started before validation")
    }
}
