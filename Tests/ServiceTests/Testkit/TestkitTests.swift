import AppStore
import Foundation
import Glibc
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service
@testable import TestStore

/// `iap-ledger testkit`: the store it creates, the chains it keeps, the mistakes it names, and
/// the rule that its CA is never trusted for Production or Sandbox.
@Suite(.tags(.database)) struct TestkitTests {
    /// A test store made by the real binary in a fresh directory.
    static func initialisedStore() throws -> (root: String, data: String) {
        let root = try OpsBinary.temporaryDirectory()
        let data = root + "/data"
        let outcome = try OpsBinary.run(["testkit", "init", "--data-dir", data])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        return (root, data)
    }

    static func expectOneLine(_ outcome: OpsBinary.Outcome, status: Int32, containing words: [String]) {
        #expect(outcome.status == status, "stdout: \(outcome.stdout) stderr: \(outcome.stderr)")
        #expect(outcome.stderrLines.count == 1, "\(outcome.stderr)")
        for word in words { #expect(outcome.stderr.contains(word), "\(word) in \(outcome.stderr)") }
    }

    // MARK: - init

    @Test func initCreatesAPrivateKeyACAAndALocalTestingOnlyConfigAndRerunningKeepsThem() throws {
        let (root, data) = try Self.initialisedStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = data + "/testkit"
        var info = stat()
        #expect(stat(directory + "/ca-leaf.key", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "the signing key is private")
        let rootDER = try #require(FileManager.default.contents(atPath: directory + "/ca-root.der"))
        #expect(TestCertificateAuthority.isTestkitRoot(der: Array(rootDER)))
        #expect(!FileManager.default.fileExists(atPath: data + "/pgdata"), "init creates no cluster; serve does")

        let configuration = try Configuration.load(path: directory + "/config.json")
        #expect(configuration.apps.count == 1)
        #expect(configuration.apps[0].environments == ["LocalTesting"])
        #expect(configuration.trustedRootsDER == [Array(rootDER)])
        #expect(configuration.apps[0].products[TestkitStore.subscription]?.entitlements == ["pro"])
        #expect(configuration.apps[0].products[TestkitStore.coins]?.grants == ["coins": 100])
        #expect(configuration.apps[0].products[TestkitStore.removeAds]?.kind == .nonConsumable)

        let again = try OpsBinary.run(["testkit", "init", "--data-dir", data])
        #expect(again.status == 0)
        #expect(again.stdout.contains("already exists"))
        #expect(FileManager.default.contents(atPath: directory + "/ca-root.der") == rootDER, "the trusted root is kept")
    }

    @Test func whatItPrintsVerifiesAsIngestionWouldAndNotificationsContinueTheChain() throws {
        let (root, data) = try Self.initialisedStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = data + "/testkit/config.json"
        func mint(_ arguments: [String]) throws -> String {
            let outcome = try OpsBinary.run(["testkit"] + arguments + ["--data-dir", data, "--print"])
            #expect(outcome.status == 0, "\(outcome.stderr)")
            try outcome.stdout.write(toFile: root + "/jws", atomically: true, encoding: .utf8)
            return root + "/jws"
        }
        func verify(_ file: String) throws -> JSONValue {
            let outcome = try OpsBinary.run(["verify", "--config", config, file])
            #expect(outcome.status == 0, "\(outcome.stdout) \(outcome.stderr)")
            return try JSONValue.parse(outcome.stdout)
        }
        let purchase = try verify(try mint(["purchase", "--product", TestkitStore.subscription, "--expires", "PT1H"]))
        #expect(purchase["transactionId"]?.stringValue == "2000000001")
        #expect(purchase["environment"]?.stringValue == "LocalTesting")
        #expect(purchase["type"]?.stringValue == "Auto-Renewable Subscription")
        let bought = try #require(purchase["purchaseDate"]?.int64Value)
        #expect(purchase["expiresDate"]?.int64Value == bought + 3_600_000)

        let renewal = try verify(
            try mint(["notify", "--type", "DID_RENEW", "--original-transaction-id", "2000000001"]))
        let renewed = try #require(renewal["data"]?["transactionInfo"])
        #expect(renewal["notificationType"]?.stringValue == "DID_RENEW")
        #expect(renewed["transactionId"]?.stringValue == "2000000002")
        #expect(renewed["originalTransactionId"]?.stringValue == "2000000001")
        #expect(renewed["transactionReason"]?.stringValue == "RENEWAL")
        let start = try #require(renewed["purchaseDate"]?.int64Value)
        #expect(renewed["expiresDate"]?.int64Value == start + 3_600_000, "a renewal is as long as the last period")
        #expect(renewal["data"]?["renewalInfo"]?["autoRenewStatus"]?.int64Value == 1)
        #expect(renewal["data"]?["status"]?.int64Value == 1)

        let refund = try verify(try mint(["notify", "--type", "REFUND", "--original-transaction-id", "2000000001"]))
        let refunded = try #require(refund["data"]?["transactionInfo"])
        #expect(refunded["transactionId"]?.stringValue == "2000000002", "a refund revokes the latest period")
        #expect(refunded["revocationDate"]?.int64Value != nil)
        #expect(refund["data"]?["status"]?.int64Value == 5)

        let off = try verify(
            try mint([
                "notify", "--type", "DID_CHANGE_RENEWAL_STATUS", "--subtype", "AUTO_RENEW_DISABLED",
                "--original-transaction-id", "2000000001",
            ]))
        #expect(off["data"]?["renewalInfo"]?["autoRenewStatus"]?.int64Value == 0)

        // A consumable is a chain of its own, with no renewal info.
        let coins = try verify(try mint(["purchase", "--product", TestkitStore.coins, "--quantity", "3"]))
        #expect(coins["transactionId"]?.stringValue == "2000000003")
        #expect(coins["quantity"]?.int64Value == 3)
        #expect(coins["expiresDate"] == nil)
        let coinRefund = try verify(
            try mint(["notify", "--type", "REFUND", "--original-transaction-id", "2000000003"]))
        #expect(coinRefund["data"]?["renewalInfo"] == nil)
        #expect(coinRefund["data"]?["transactionInfo"]?["revocationDate"] != nil)
    }

    // MARK: - the CA is for local testing only

    static func configTrusting(_ rootPath: String, environments: String) -> String {
        #"{"apps": [{"bundleId": "com.example.game", "appAppleId": 1234, "environments": \#(environments)}], "#
            + #""trustedRoots": ["\#(rootPath)"]}"#
    }

    // (An app mixing LocalTesting with Sandbox is refused before the roots are looked at:
    // FirstHourTrapsTests.)
    @Test(arguments: [#"["Sandbox"]"#, #"["Production"]"#, #"["Production", "Sandbox"]"#, "null"])
    func aConfigTrustingTheTestkitRootForRealEnvironmentsIsRefused(environments: String) throws {
        let (root, data) = try Self.initialisedStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // "null" leaves `environments` out: the default is Production and Sandbox.
        let text =
            environments == "null"
            ? #"{"apps": [{"bundleId": "com.example.game", "appAppleId": 1234}], "trustedRoots": ["\#(data)/testkit/ca-root.der"]}"#
            : Self.configTrusting(data + "/testkit/ca-root.der", environments: environments)
        let file = root + "/real.json"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.self) { try Configuration.load(path: file) }
        do {
            _ = try Configuration.load(path: file)
        } catch {
            #expect(error.key == "trustedRoots[0]")
            #expect(error.message.contains("testkit CA"))
        }
        let outcome = try OpsBinary.run(["serve", "--port", "0", "--config", file, "--data-dir", root + "/db"])
        Self.expectOneLine(outcome, status: 1, containing: [file, "trustedRoots[0]", "testkit CA", "LocalTesting"])
        #expect(!FileManager.default.fileExists(atPath: root + "/db"), "refused before any database")
    }

    @Test func otherRootsForRealEnvironmentsAndTheTestkitRootForLocalTestingLoad() throws {
        let (root, data) = try Self.initialisedStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data(TestVectors.shared.rootDER).write(to: URL(fileURLWithPath: root + "/test-pki.der"))
        for (path, environments) in [
            (root + "/test-pki.der", #"["Sandbox", "Production"]"#),
            (data + "/testkit/ca-root.der", #"["LocalTesting"]"#),
        ] {
            let file = root + "/ok.json"
            try Self.configTrusting(path, environments: environments).write(
                toFile: file, atomically: true, encoding: .utf8)
            #expect(try Configuration.load(path: file).trustedRootsDER.count == 1)
        }
    }

    // MARK: - bad input: one line each

    static let badInvocations: [(arguments: [String], words: [String])] = [
        (["frobnicate"], ["unknown testkit subcommand", "frobnicate"]),
        (["init", "extra"], ["unexpected argument", "extra"]),
        (["purchase", "--product", TestkitStore.subscription], ["needs --user"]),
        (["purchase", "--user", "u-1"], ["needs --product"]),
        (["purchase", "--user", "u-1", "--product", "a b"], ["--product"]),
        (["purchase", "--user", "", "--product", "p"], ["--user", "1–256 bytes"]),
        (["purchase", "--user", "u-1", "--product", "p", "--type", "gadget"], ["--type", "gadget", "auto-renewable"]),
        (["purchase", "--user", "u-1", "--product", "p", "--expires", "tomorrow"], ["--expires", "tomorrow", "P1M"]),
        (["purchase", "--user", "u-1", "--product", "p", "--expires", "P0D"], ["--expires", "P0D"]),
        (["purchase", "--user", "u-1", "--product", "p", "--quantity", "0"], ["--quantity", "1…100"]),
        (
            ["purchase", "--user", "u-1", "--product", "p", "--app-account-token", "nope"],
            ["--app-account-token", "UUID"]
        ),
        (["purchase", "--user", "u-1", "--product", "p", "--url", "ftp://x", "--key", "k"], ["--url", "ftp://x"]),
        (["purchase", "--product", "p", "--print", "--url", "http://x"], ["--url", "--print"]),
        (["purchase", "--user", "u-1", "--product", "p", "--colour", "red"], ["unknown option --colour"]),
        (["notify", "--original-transaction-id", "1"], ["needs --type"]),
        (["notify", "--type", "CANCEL", "--original-transaction-id", "1"], ["--type", "CANCEL", "DID_RENEW"]),
        (["notify", "--type", "REFUND"], ["REFUND needs --original-transaction-id"]),
        (["notify", "--type", "REFUND", "--original-transaction-id", "abc"], ["--original-transaction-id", "abc"]),
        (
            ["notify", "--type", "REFUND", "--subtype", "VOLUNTARY", "--original-transaction-id", "1"],
            ["VOLUNTARY", "REFUND takes no --subtype"]
        ),
        (
            ["notify", "--type", "DID_CHANGE_RENEWAL_STATUS", "--original-transaction-id", "1"],
            ["needs --subtype", "AUTO_RENEW_DISABLED"]
        ),
        (
            ["notify", "--type", "REFUND", "--original-transaction-id", "1", "--expires", "P1M"],
            ["--expires", "DID_RENEW"]
        ),
        (["notify", "--type", "TEST", "--original-transaction-id", "1"], ["TEST"]),
        (
            ["notify", "--type", "REFUND", "--original-transaction-id", "1", "--percentage", "0"],
            ["--percentage", "1…100000", "\"0\""]
        ),
        (
            ["notify", "--type", "REFUND", "--original-transaction-id", "1", "--percentage", "100001"],
            ["--percentage", "1…100000", "\"100001\""]
        ),
        (
            ["notify", "--type", "REFUND", "--original-transaction-id", "1", "--percentage", "50%"],
            ["--percentage", "integer", "\"50%\""]
        ),
        (
            ["notify", "--type", "REFUND", "--original-transaction-id", "1", "--percentage", "12.5"],
            ["--percentage", "integer", "\"12.5\""]
        ),
        (
            ["notify", "--type", "REVOKE", "--original-transaction-id", "1", "--percentage", "50000"],
            ["--percentage is only for REFUND", "REVOKE"]
        ),
        (
            ["notify", "--type", "REFUND_REVERSED", "--original-transaction-id", "1", "--percentage", "50000"],
            ["--percentage is only for REFUND", "REFUND_REVERSED"]
        ),
        (["init", "--apple-port", "0"], ["--apple-port", "1…65535", "\"0\""]),
        (["init", "--apple-port", "http"], ["--apple-port", "http"]),
        (["receipt", "--product", TestkitStore.subscription], ["testkit receipt needs --user"]),
        (["receipt", "--print"], ["--print without --user needs --product"]),
        (["receipt", "--user", "u-1", "--product", "a b"], ["--product", "a b"]),
        (["receipt", "--user", "u-1", "--product", "p", "--product", ""], ["--product", "\"\""]),
        (["receipt", "--user", "\u{7}"], ["--user", "1–256 bytes"]),
        (["receipt", "--user", "u-1", "--type", "consumable"], ["unknown option --type"]),
        (["receipt", "--user", "u-1", "--product", "p"], ["IAP_LEDGER_KEY"]),
        (["receipt", "--product", "p", "--print", "--key", "k"], ["--key", "--print"]),
        (["purchase", "--user", "u-1", "--product", "p", "--apple-only", "--print"], ["--apple-only", "--print"]),
        (["purchase", "--product", "p", "--apple-only"], ["needs --user"]),
        (["notify", "--type", "TEST", "--apple-only", "--url", "http://x"], ["--url", "--apple-only"]),
        (["apple", "--port", "65536"], ["--port", "0…65535", "65536"]),
        (["apple", "--url", "ftp://x"], ["--url must be the service's http(s) URL", "ftp://x"]),
        (["apple", "--key", "k"], ["unknown option --key"]),
        (["apple", "now"], ["unexpected argument", "now"]),
    ]

    @Test(arguments: badInvocations.indices)
    func aBadFlagIsOneLineAndExitTwo(index: Int) throws {
        let (arguments, words) = Self.badInvocations[index]
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let outcome = try OpsBinary.run(["testkit"] + arguments + ["--data-dir", root + "/data"])
        Self.expectOneLine(outcome, status: 2, containing: ["iap-ledger testkit"] + words)
        #expect(!FileManager.default.fileExists(atPath: root + "/data"), "nothing was created")
    }

    @Test func mistakesOnlyTheStoreCanSeeAreOneLineAndExitOne() throws {
        let empty = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let before = try OpsBinary.run(["testkit", "purchase", "--product", "p", "--print", "--data-dir", empty])
        Self.expectOneLine(before, status: 1, containing: ["no test store in \(empty)/testkit", "testkit init"])

        let (root, data) = try Self.initialisedStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        func run(_ arguments: [String]) throws -> OpsBinary.Outcome {
            try OpsBinary.run(["testkit"] + arguments + ["--data-dir", data, "--print"])
        }
        Self.expectOneLine(
            try run(["notify", "--type", "REFUND", "--original-transaction-id", "42"]), status: 1,
            containing: ["no transaction with originalTransactionId 42"])
        Self.expectOneLine(
            try run(["purchase", "--product", "com.example.unknown"]), status: 2,
            containing: ["com.example.unknown", "--type"])
        Self.expectOneLine(
            try run(["purchase", "--product", TestkitStore.coins, "--expires", "P1M"]), status: 2,
            containing: ["--expires", "auto-renewable"])
        #expect(try run(["purchase", "--product", TestkitStore.coins]).status == 0)
        Self.expectOneLine(
            try run(["notify", "--type", "DID_RENEW", "--original-transaction-id", "2000000001"]), status: 1,
            containing: ["DID_RENEW", "auto-renewable", "Consumable"])
        Self.expectOneLine(
            try run(["receipt", "--product", "com.example.unknown"]), status: 2,
            containing: ["com.example.unknown", "is not in", "config.json"])
        Self.expectOneLine(
            try run(["receipt", "--user", "u-9"]), status: 1,
            containing: ["u-9 bought nothing with `testkit receipt`", "--product"])
        let standIn = try OpsBinary.run(["testkit", "apple", "--data-dir", empty])
        Self.expectOneLine(standIn, status: 1, containing: ["no test store in \(empty)/testkit"])

        // Posting needs a key, and a service that answers: both named.
        let noKey = try OpsBinary.run([
            "testkit", "purchase", "--user", "u-1", "--product", TestkitStore.coins, "--data-dir", data,
        ])
        Self.expectOneLine(noKey, status: 2, containing: ["IAP_LEDGER_KEY"])
        let nobody = try OpsBinary.run(
            [
                "testkit", "purchase", "--user", "u-1", "--product", TestkitStore.coins, "--data-dir", data,
                "--url", "http://127.0.0.1:9", "--key", "k",
            ])
        Self.expectOneLine(nobody, status: 1, containing: ["cannot reach http://127.0.0.1:9/v1/purchases"])
    }

    @Test func aProratedRefundIsMintedWithItsShareAndTheHelpSaysHow() throws {
        let (root, data) = try Self.initialisedStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        func mint(_ arguments: [String]) throws -> JSONValue {
            try Self.mintVerified(arguments, root: root, data: data)
        }
        _ = try mint(["purchase", "--product", TestkitStore.coins])
        let refund = try mint(
            ["notify", "--type", "REFUND", "--original-transaction-id", "2000000001", "--percentage", "50000"])
        let refunded = try #require(refund["data"]?["transactionInfo"])
        #expect(refunded["revocationType"]?.stringValue == "REFUND_PRORATED")
        #expect(refunded["revocationPercentage"]?.int64Value == 50_000)
        #expect(refunded["revocationDate"]?.int64Value != nil)

        let help = try OpsBinary.run(["testkit", "--help"]).stdout
        #expect(help.contains("[--percentage N]"))
        #expect(help.contains("REFUND --percentage N"))
        #expect(help.contains("1…100000"))
        // docs/testkit.md tells the same.
        let doc = try String(contentsOfFile: OpsBinary.packageRoot + "/docs/testkit.md", encoding: .utf8)
        for words in ["--percentage N", "REFUND_PRORATED", "revocationPercentage", "1…100000", "50000"] {
            #expect(doc.contains(words), "docs/testkit.md names \(words)")
        }
    }

    /// Apple's consent withdrawal as the test store mints it verifies as ingestion would, with
    /// the app transaction of the Apple Account every test-store purchase carries.
    @Test func aConsentWithdrawalIsMintedWithTheTestStoresAppleAccount() throws {
        let (root, data) = try Self.initialisedStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let purchase = try OpsBinary.run(
            ["testkit", "purchase", "--product", TestkitStore.coins, "--data-dir", data, "--print"])
        #expect(purchase.status == 0, "\(purchase.stderr)")
        let minted = try OpsBinary.run([
            "testkit", "notify", "--type", "RESCIND_CONSENT", "--data-dir", data, "--print",
        ])
        #expect(minted.status == 0, "\(minted.stderr)")
        try minted.stdout.write(toFile: root + "/jws", atomically: true, encoding: .utf8)
        let verified = try OpsBinary.run(["verify", "--config", data + "/testkit/config.json", root + "/jws"])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        let decoded = try JSONValue.parse(verified.stdout)
        #expect(decoded["notificationType"]?.stringValue == "RESCIND_CONSENT")
        #expect(decoded["data"] == nil)
        #expect(decoded["appData"]?["appTransactionInfo"]?["appTransactionId"]?.stringValue == "704289572311887741")
        // The purchase it is about carries the same Apple Account.
        try purchase.stdout.write(toFile: root + "/purchase", atomically: true, encoding: .utf8)
        let bought = try OpsBinary.run(["verify", "--config", data + "/testkit/config.json", root + "/purchase"])
        #expect(try JSONValue.parse(bought.stdout)["appTransactionId"]?.stringValue == "704289572311887741")
        let chained = try OpsBinary.run(
            [
                "testkit", "notify", "--type", "RESCIND_CONSENT", "--original-transaction-id", "2000000001",
                "--data-dir", data,
            ])
        #expect(chained.status != 0)
        #expect(chained.stderr.contains("RESCIND_CONSENT is about no transaction"), "\(chained.stderr)")
    }

    /// Runs `testkit ARGUMENTS --print` on the store in `data` and answers what `iap-ledger verify`
    /// decodes of it: what was minted, checked as ingestion checks it.
    static func mintVerified(_ arguments: [String], root: String, data: String) throws -> JSONValue {
        let outcome = try OpsBinary.run(["testkit"] + arguments + ["--data-dir", data, "--print"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        try outcome.stdout.write(toFile: root + "/jws", atomically: true, encoding: .utf8)
        let verified = try OpsBinary.run(["verify", "--config", data + "/testkit/config.json", root + "/jws"])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        return try JSONValue.parse(verified.stdout)
    }

    @Test func helpNamesEverySubcommand() throws {
        for arguments in [
            ["testkit", "--help"], ["testkit", "purchase", "--help"], ["testkit", "receipt", "--help"],
            ["testkit", "apple", "--help"],
        ] {
            let outcome = try OpsBinary.run(arguments)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            for word in [
                "testkit init", "testkit purchase", "testkit notify", "testkit receipt", "testkit apple",
                "verifyReceipt", "--apple-port", "21003", "21004",
            ] {
                #expect(outcome.stdout.contains(word))
            }
        }
        #expect(try OpsBinary.run(["--help"]).stdout.contains("testkit init|purchase|notify|receipt|apple"))
    }

    // MARK: - the minter, without I/O

    @Test func expiriesAreInstantsOrCalendarDurations() {
        let jan31 = RFC3339.parse("2027-01-31T10:00:00.000Z")!
        #expect(TestkitExpiry.parse("P1M")?.millis(from: jan31) == RFC3339.parse("2027-02-28T10:00:00.000Z"))
        #expect(TestkitExpiry.parse("P1W")?.millis(from: jan31) == jan31 + 7 * 86_400_000)
        #expect(TestkitExpiry.parse("PT5M")?.millis(from: jan31) == jan31 + 300_000)
        #expect(TestkitExpiry.parse("P1DT1H")?.millis(from: jan31) == jan31 + 90_000_000)
        #expect(TestkitExpiry.parse("2027-03-01T00:00:00Z") == .at(RFC3339.parse("2027-03-01T00:00:00Z")!))
        for bad in ["", "P", "PT", "P0D", "1M", "P1X", "PM", "P1.5D", "T5M", "P1MT"] {
            #expect(TestkitExpiry.parse(bad) == nil, "\(bad)")
        }
    }
}

/// The minter on its own: state and time in, payloads out.
@Suite struct TestkitMinterTests {
    static let now: Int64 = 1_800_000_000_000

    func subscribed() throws -> TestkitState {
        var state = TestkitState()
        _ = try TestkitMinter.purchase(
            TestkitPurchase(productId: "pro", type: .autoRenewable, expires: .after(.init(day: 7))),
            bundleId: "b", now: Self.now, state: &state)
        return state
    }

    func notify(
        _ type: String, subtype: String? = nil, transactionId: String? = nil, at time: Int64 = now + 1000,
        state: inout TestkitState
    ) throws -> JSONValue {
        let payload = try TestkitMinter.notification(
            TestkitNotification(
                type: type, subtype: subtype, originalTransactionId: "2000000001", transactionId: transactionId),
            bundleId: "b", now: time, uuid: "u", state: &state,
            sign: { String(decoding: $0.serialized(), as: UTF8.self) })
        return payload
    }

    /// The nested "signed" info (here: its JSON text, signed by the identity closure).
    func nested(_ payload: JSONValue, _ key: String) throws -> JSONValue {
        try JSONValue.parse(try #require(payload["data"]?[key]?.stringValue))
    }

    @Test func aRefundOfAnOlderPeriodRevokesThatPeriodOnly() throws {
        var state = try subscribed()
        _ = try notify("DID_RENEW", state: &state)
        #expect(state.chain("2000000001").count == 2)
        let refund = try notify("REFUND", transactionId: "2000000001", state: &state)
        #expect(try nested(refund, "signedTransactionInfo")["transactionId"]?.stringValue == "2000000001")
        #expect(state.transactions[0]["revocationDate"]?.int64Value == Self.now + 1000)
        #expect(state.transactions[1]["revocationDate"] == nil)
        // The status describes the refunded transaction.
        #expect(refund["data"]?["status"]?.int64Value == 5)
        #expect(throws: TestkitError.self) { _ = try notify("REFUND", transactionId: "2000000009", state: &state) }
    }

    @Test func aProratedRefundCarriesItsShareAndAFullRefundOrAReversalNone() throws {
        var state = TestkitState()
        _ = try TestkitMinter.purchase(
            TestkitPurchase(productId: "coins", type: .consumable), bundleId: "b", now: Self.now, state: &state)
        func refund(_ type: String, percentage: Int64?, at time: Int64) throws -> JSONValue {
            let payload = try TestkitMinter.notification(
                TestkitNotification(type: type, originalTransactionId: "2000000001", percentage: percentage),
                bundleId: "b", now: time, uuid: "u", state: &state,
                sign: { String(decoding: $0.serialized(), as: UTF8.self) })
            return try nested(payload, "signedTransactionInfo")
        }
        let prorated = try refund("REFUND", percentage: 33_333, at: Self.now + 1000)
        #expect(prorated["revocationType"]?.stringValue == "REFUND_PRORATED")
        #expect(prorated["revocationPercentage"]?.int64Value == 33_333)
        #expect(prorated["revocationDate"]?.int64Value == Self.now + 1000)

        let reversed = try refund("REFUND_REVERSED", percentage: nil, at: Self.now + 2000)
        for field in ["revocationType", "revocationPercentage", "revocationDate", "revocationReason"] {
            #expect(reversed[field] == nil, "a reversal removes \(field)")
        }
        let full = try refund("REFUND", percentage: nil, at: Self.now + 3000)
        #expect(full["revocationType"]?.stringValue == "REFUND_FULL")
        #expect(full["revocationPercentage"] == nil)
        #expect(throws: TestkitError.self) { _ = try refund("REVOKE", percentage: 50_000, at: Self.now + 4000) }
    }

    @Test func statusFollowsTheFactsAtTheNotificationsTime() throws {
        var state = try subscribed()
        let grace = try notify("DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", state: &state)
        #expect(grace["data"]?["status"]?.int64Value == 4)
        #expect(try nested(grace, "signedRenewalInfo")["isInBillingRetryPeriod"]?.boolValue == true)
        let later = Self.now + 60 * 86_400_000
        let expired = try notify("EXPIRED", subtype: "BILLING_RETRY", at: later, state: &state)
        #expect(expired["data"]?["status"]?.int64Value == 2)
        #expect(try nested(expired, "signedRenewalInfo")["expirationIntent"]?.int64Value == 2)
        #expect(try nested(expired, "signedRenewalInfo")["autoRenewStatus"]?.int64Value == 0)
        let renewed = try notify("DID_RENEW", subtype: "BILLING_RECOVERY", at: later, state: &state)
        let period = try nested(renewed, "signedTransactionInfo")
        #expect(period["purchaseDate"]?.int64Value == later)
        #expect(period["expiresDate"]?.int64Value == later + 7 * 86_400_000)
        #expect(renewed["data"]?["status"]?.int64Value == 1)
    }
}
