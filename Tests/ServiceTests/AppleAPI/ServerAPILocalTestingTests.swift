import AppStore
import Foundation
import Infrastructure
import Service
import TestSupport
import Testing

/// `serverAPI` for a local-testing app (Apple's libraries' LOCAL_TESTING environment): Apple has
/// no such host, so the config names the stand-in's, and such an app asks only it.
@Suite struct ServerAPILocalTestingTests {
    static let keyFile = ConfigurationServerAPITests.testKeyPath

    static func config(environments: String, serverAPI: String) -> String {
        #"{"apps": [{"bundleId": "com.example", "appAppleId": 1234, "environments": \#(environments), "serverAPI": \#(serverAPI)}]}"#
    }

    static func block(_ baseURLs: String?) -> String {
        #"{"issuerId": "issuer-1", "keyId": "KEY1", "privateKeyFile": "\#(keyFile)""#
            + (baseURLs.map { #", "baseURLs": \#($0)}"# } ?? "}")
    }

    @Test(
        arguments: [
            (#"["LocalTesting"]"#, nil, "apps[0].serverAPI.baseURLs.LocalTesting", "is required"),
            (
                #"["LocalTesting", "Xcode"]"#, #"{"Sandbox": "https://x"}"#, "apps[0].serverAPI.baseURLs.Sandbox",
                "never asked"
            ),
            (
                #"["LocalTesting"]"#, #"{"LocalTesting": "127.0.0.1:8089"}"#, "apps[0].serverAPI.baseURLs.LocalTesting",
                "http(s) URL"
            ),
            (
                #"["Production", "Sandbox"]"#, #"{"LocalTesting": "http://127.0.0.1:8089"}"#,
                "apps[0].serverAPI.baseURLs.LocalTesting", "never asked"
            ),
            (#"["Xcode"]"#, nil, "apps[0].serverAPI", "no App Store Server API"),
        ] as [(String, String?, String, String)])
    func aLocalTestingMistakeNamesTheKey(environments: String, baseURLs: String?, key: String, words: String) throws {
        let text = Self.config(environments: environments, serverAPI: Self.block(baseURLs))
        do {
            _ = try Configuration.parse(Array(text.utf8), file: "c.json", baseDirectory: "/nonexistent")
            Issue.record("accepted: \(environments) \(baseURLs ?? "")")
        } catch {
            #expect(error.key == key, "\(error)")
            #expect(error.description.contains(words), "\(error)")
        }
    }

    @Test func aLocalTestingClientAsksOnlyItsStandInAndAStoreAppStillFallsBackToSandbox() throws {
        let key = try AppStoreServerKey.load(issuerId: "issuer-1", keyId: "KEY1", path: Self.keyFile)
        let apple = try AppleServerAPIStandIn(key: key, bundleId: "com.example")
        defer { apple.stop() }
        // The stand-in's "production" half plays the local one; Sandbox has what it lacks.
        let local = TestVectors.shared.signedTransaction(["transactionId": "8100000001"])
        apple.production.addTransaction(local)
        apple.sandbox.addTransaction(TestVectors.shared.signedTransaction(["transactionId": "8100000002"]))
        let text = Self.config(
            environments: #"["LocalTesting"]"#,
            serverAPI: Self.block(#"{"LocalTesting": "\#(apple.productionURL.absoluteString)"}"#))
        let app = try Configuration.parse(Array(text.utf8), file: "c.json", baseDirectory: "/").apps[0]
        #expect(app.serverAPI?.searchOrder == [.localTesting])
        let client = try #require(app.serverAPI).client(bundleId: app.bundleId)
        #expect(
            try client.transactionInfo("8100000001")
                == TransactionInfo(environment: .localTesting, signedTransactionInfo: local))
        #expect(
            throws: AppStoreServerError.rejected(
                status: 404, errorCode: 4_040_010, errorMessage: "Transaction id not found.")
        ) {
            try client.transactionInfo("8100000002")
        }
        #expect(apple.sandbox.requests.isEmpty, "a local-testing app never falls back to Apple's Sandbox")

        // Without a URL for LocalTesting, nothing is sent.
        let bare = AppStoreServerClient(key: key, bundleId: "com.example", searchOrder: [.localTesting])
        #expect(throws: AppStoreServerError.self) { try bare.transactionInfo("8100000001") }
        #expect(apple.production.requests.count == 2)

        // A store app is as before: Production, then Sandbox on 4040010.
        let store = Configuration.ServerAPI.environments(for: ["Sandbox"])
        #expect(store == [.production, .sandbox])
        #expect(Configuration.ServerAPI.environments(for: ["Xcode", "LocalTesting"]) == [.localTesting])
    }
}
