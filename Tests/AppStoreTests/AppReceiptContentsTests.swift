import AppStore
import Foundation
import JSON
import TestStore
import TestSupport
import Testing

/// The app receipt's contents in Apple's receipt format, as `testkit receipt` mints them, and the
/// verifyReceipt stand-in that answers for them: held against the `openssl` command line (an
/// independent reader of the DER and of the CMS signature) and against the service's own
/// reading of verifyReceipt answers (`ReceiptVerifier` → `LegacyReceipt`).
@Suite struct AppReceiptContentsTests {
    static let bought: Int64 = 1_796_168_125_000  // 2026-12-01T23:35:25Z

    static let contents = AppReceiptContents(
        bundleId: "com.example.game", appVersion: "1.0", originalAppVersion: "0.9", creationDate: bought + 5_000,
        purchases: [
            .init(
                productId: "com.example.game.pro.monthly", transactionId: "2000000001",
                originalTransactionId: "2000000001",
                purchaseDate: bought, originalPurchaseDate: bought, expiresDate: bought + 2_592_000_000,
                webOrderLineItemId: 92_000_000_001, isInIntroOfferPeriod: false),
            // A renewal dated with milliseconds (as `testkit notify` mints them), later refunded.
            .init(
                productId: "com.example.game.pro.monthly", transactionId: "2000000003",
                originalTransactionId: "2000000001",
                purchaseDate: bought + 2_592_000_123, originalPurchaseDate: bought, expiresDate: bought + 5_184_000_123,
                webOrderLineItemId: 92_000_000_003, cancellationDate: bought + 2_600_000_000, isInIntroOfferPeriod: true
            ),
            .init(
                quantity: 3, productId: "com.example.game.coins100", transactionId: "2000000002",
                originalTransactionId: "2000000002", purchaseDate: bought + 1_000, originalPurchaseDate: bought + 1_000),
        ])

    // MARK: - contents

    @Test func contentsSurviveARoundTrip() throws {
        let der = Self.contents.der()
        #expect(der.first == 0x31, "a SET")
        // In-app purchases are members of a SET: DER orders them by their encoding, not as given.
        var decoded = try AppReceiptContents(der: der)
        decoded.purchases.sort { $0.transactionId < $1.transactionId }
        var expected = Self.contents
        expected.purchases.sort { $0.transactionId < $1.transactionId }
        #expect(decoded == expected)
        let bare = AppReceiptContents(bundleId: "b", appVersion: "", purchases: [])
        #expect(try AppReceiptContents(der: bare.der()) == bare)
    }

    /// `openssl asn1parse` as the judge: a SET of SEQUENCE { INTEGER, INTEGER, OCTET STRING },
    /// the bundle id a UTF8String inside its octets, each in-app purchase a SET again.
    @Test func opensslReadsASetOfReceiptAttributes() throws {
        let der = Self.contents.der()
        let lines = try Self.asn1parse(der)
        #expect(lines.first?.contains(":d=0 ") == true && lines.first?.contains("cons: SET") == true, "\(lines)")
        let members = lines.filter { $0.contains(":d=1 ") }
        #expect(members.count == 2 + 1 + 1 + 3, "bundle id, two versions, creation date, three purchases: \(lines)")
        #expect(members.allSatisfy { $0.contains("cons: SEQUENCE") }, "\(members)")
        let fields = lines.filter { $0.contains(":d=2 ") }
        #expect(fields.count == members.count * 3, "\(lines)")
        guard fields.count == members.count * 3 else { return }
        for index in stride(from: 0, to: fields.count, by: 3) {
            #expect(fields[index].contains("prim: INTEGER :"))
            #expect(fields[index + 1].hasSuffix("prim: INTEGER :01"), "version 1")
            #expect(fields[index + 2].contains("prim: OCTET STRING"))
        }
        // Type 2's value: UTF8String (0C), 16 bytes, "com.example.game".
        let bundle = try #require(fields.indices.first { fields[$0].hasSuffix("prim: INTEGER :02") })
        let hex = Array("com.example.game".utf8).map { String(format: "%02X", $0) }.joined()
        #expect(fields[bundle + 2].hasSuffix("[HEX DUMP]:0C10" + hex), "\(fields[bundle + 2])")
        // Each in-app purchase (17 = 0x11) is itself a SET of attributes: quantity 1701 (0x06A5) among them.
        let purchases = fields.indices.filter { fields[$0].hasSuffix("prim: INTEGER :11") }
        #expect(purchases.count == 3)
        for index in purchases {
            let offset = try #require(Int(fields[index + 2].prefix { $0 != ":" }))
            let inner = try Self.asn1parse(der, strparse: offset)
            #expect(inner.first?.contains("cons: SET") == true, "\(inner)")
            #expect(inner.contains { $0.hasSuffix("prim: INTEGER :06A5") }, "\(inner)")
            #expect(inner.filter { $0.contains(":d=1 ") }.allSatisfy { $0.contains("cons: SEQUENCE") })
        }
    }

    @Test func whatIsNotApplesFormatIsRefusedWithItsReason() throws {
        func reason(_ der: [UInt8]) -> String? {
            do {
                _ = try AppReceiptContents(der: der)
                return nil
            } catch {
                guard case .notAReceipt(let detail) = error else { return "\(error)" }
                return detail
            }
        }
        let der = Self.contents.der()
        #expect(reason(der + [0x00])?.contains("not a DER SET") == true, "trailing bytes")
        #expect(reason([0x30] + der.dropFirst())?.contains("not a DER SET") == true, "a SEQUENCE, not a SET")
        #expect(reason([0x31, 0x03, 0x02, 0x01, 0x01])?.contains("SEQUENCE { type, version, OCTET STRING }") == true)
        let noBundle = AppReceiptContents(bundleId: "x", appVersion: "1", purchases: []).der()
        #expect(reason(noBundle) == nil)
        #expect(reason(Array("not asn.1".utf8)) != nil)
    }

    // MARK: - the verifyReceipt stand-in

    struct Store {
        let authority: TestCertificateAuthority
        let signer: AppReceiptSigner
        init() throws {
            authority = try TestCertificateAuthority.generate(now: Int64(Date().timeIntervalSince1970))
            signer = try AppReceiptSigner(
                privateKeyPEM: authority.leafKeyPEM, certificateDER: authority.leafDER,
                chainDER: [authority.intermediateDER])
        }
        func receipt(_ contents: AppReceiptContents = AppReceiptContentsTests.contents) -> String {
            signer.signedReceipt(contents.der())
        }
    }

    static func request(_ receipt: String, password: String? = "secret", excludeOld: Bool = false) -> [UInt8] {
        var body: [String: JSONValue] = ["receipt-data": .string(receipt)]
        if let password { body["password"] = .string(password) }
        if excludeOld { body["exclude-old-transactions"] = true }
        return JSONValue.object(body).serialized()
    }

    static func standIn(_ store: Store) -> VerifyReceiptStandIn {
        VerifyReceiptStandIn(
            trustedRootsDER: [store.authority.rootDER], sharedSecrets: ["com.example.game": "secret"],
            environment: "LocalTesting")
    }

    @Test func aReceiptOfTheStoreIsAnsweredAsAppleAnswersAndTheServiceReadsIt() throws {
        let store = try Store()
        let receipt = store.receipt()
        // The openssl command line accepts the signature against the root, with the chain the receipt carries.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receipt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(Base64Decoding.decode(receipt)).write(to: directory.appendingPathComponent("r.der"))
        try #require(TestCertificateAuthority.pem(certificateDER: store.authority.rootDER))
            .write(to: directory.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
        let verified = try Self.run(
            "/usr/bin/openssl",
            [
                "cms", "-verify", "-inform", "DER", "-in", directory.appendingPathComponent("r.der").path, "-binary",
                "-CAfile", directory.appendingPathComponent("root.pem").path, "-out",
                directory.appendingPathComponent("c.der").path,
            ])
        #expect(verified.status == 0, "\(verified.output)")
        #expect(Array(try Data(contentsOf: directory.appendingPathComponent("c.der"))) == Self.contents.der())

        let now = Self.bought + 60_000
        let answer = Self.standIn(store).answer(Self.request(receipt), now: now) { chain in
            chain == "2000000001"
                ? .init(autoRenewProductId: "com.example.game.pro.monthly", autoRenewStatus: false, expirationIntent: 1)
                : nil
        }
        #expect(answer["status"]?.int64Value == 0)
        #expect(answer["environment"]?.stringValue == "LocalTesting")
        #expect(answer["receipt"]?["bundle_id"]?.stringValue == "com.example.game")
        #expect(answer["receipt"]?["request_date_ms"]?.stringValue == String(now))
        let inApp = try #require(answer["receipt"]?["in_app"]?.arrayValue)
        #expect(
            inApp.map { $0["transaction_id"]?.stringValue } == ["2000000001", "2000000002", "2000000003"],
            "oldest first")
        #expect(inApp[1]["quantity"]?.stringValue == "3")
        #expect(inApp[0]["purchase_date"]?.stringValue == "2026-12-01 23:35:25 Etc/GMT")
        #expect(inApp[2]["purchase_date_ms"]?.stringValue == String(Self.bought + 2_592_000_123))
        #expect(inApp[2]["cancellation_date_ms"]?.stringValue == String(Self.bought + 2_600_000_000))
        let latest = try #require(answer["latest_receipt_info"]?.arrayValue)
        #expect(
            latest.map { $0["transaction_id"]?.stringValue } == ["2000000003", "2000000002", "2000000001"],
            "newest first")
        #expect(answer["latest_receipt"]?.stringValue == receipt)
        let pending = try #require(answer["pending_renewal_info"]?.arrayValue)
        #expect(pending.count == 1)
        #expect(pending[0]["auto_renew_status"]?.stringValue == "0")
        #expect(pending[0]["expiration_intent"]?.stringValue == "1")

        // exclude-old-transactions: each subscription's latest period only (the coins stay).
        let recent = Self.standIn(store).answer(Self.request(receipt, excludeOld: true), now: now)
        #expect(
            recent["latest_receipt_info"]?.arrayValue?.map { $0["transaction_id"]?.stringValue } == [
                "2000000003", "2000000002",
            ])

        // What the service makes of the answer, through its own verifyReceipt client.
        let server = try StandInServer(["/verifyReceipt": [(200, String(decoding: answer.serialized(), as: UTF8.self))]]
        )
        defer { server.stop() }
        let client = ReceiptVerifier(
            productionURL: server.url("/verifyReceipt"), sandboxURL: server.url("/verifyReceipt"), maxRetries: 0)
        let legacy = try client.verify(receiptData: receipt, password: "secret", askedAt: 0)
        #expect(legacy.environment == "LocalTesting")
        #expect(legacy.bundleId == "com.example.game")
        #expect(legacy.transactions.map(\.transactionId) == ["2000000003", "2000000002", "2000000001"])
        #expect(legacy.transactions[0].originalTransactionId == "2000000001")
        #expect(legacy.transactions[0].expiresDate == Self.bought + 5_184_000_123)
        #expect(legacy.transactions[0].revocationDate == Self.bought + 2_600_000_000)
        #expect(legacy.transactions[0].signedDate == now, "dated by request_date_ms")
        #expect(legacy.transactions[1].quantity == 3)
        #expect(legacy.renewalInfos.first?.autoRenewStatus == 0)
    }

    @Test func aReceiptOfAnotherCAIsNotAuthenticatedAndAMalformedOneIsMalformed() throws {
        let store = try Store()
        let other = try Store()
        let standIn = Self.standIn(store)
        #expect(standIn.answer(Self.request(other.receipt()), now: 0)["status"]?.int64Value == 21003)
        // The same signer's certificate without the intermediate it chains through: no path to the root.
        let bare = try AppReceiptSigner(
            privateKeyPEM: store.authority.leafKeyPEM, certificateDER: store.authority.leafDER)
        #expect(
            standIn.answer(Self.request(bare.signedReceipt(Self.contents.der())), now: 0)["status"]?.int64Value == 21003
        )
        #expect(standIn.answer(Self.request("!!!"), now: 0)["status"]?.int64Value == 21002)
        #expect(
            standIn.answer(Self.request(JWSSigner.base64(Self.contents.der())), now: 0)["status"]?.int64Value == 21002,
            "the contents without a signature")
        // Signed by the store, but not Apple's receipt format inside.
        #expect(
            standIn.answer(Self.request(store.signer.signedReceipt(Array("hello".utf8))), now: 0)["status"]?.int64Value
                == 21002)
        #expect(standIn.answer(Array("{".utf8), now: 0)["status"]?.int64Value == 21000)
        #expect(standIn.answer(Array(#"{"password":"secret"}"#.utf8), now: 0)["status"]?.int64Value == 21002)

        // The service hears 21003 as a final rejection, not as "try again".
        let server = try StandInServer([
            "/verifyReceipt": [
                (
                    200,
                    String(decoding: standIn.answer(Self.request(other.receipt()), now: 0).serialized(), as: UTF8.self)
                )
            ]
        ])
        defer { server.stop() }
        let client = ReceiptVerifier(
            productionURL: server.url("/verifyReceipt"), sandboxURL: server.url("/verifyReceipt"), maxRetries: 0)
        #expect(throws: ReceiptError.rejected(status: 21003)) {
            try client.verify(receiptData: other.receipt(), askedAt: 0)
        }
    }

    @Test func theWrongPasswordIs21004AndNoneIsOnlyEnoughWithoutASubscription() throws {
        let store = try Store()
        let standIn = Self.standIn(store)
        #expect(standIn.answer(Self.request(store.receipt(), password: "guess"), now: 0)["status"]?.int64Value == 21004)
        #expect(standIn.answer(Self.request(store.receipt(), password: nil), now: 0)["status"]?.int64Value == 21004)
        let coins = AppReceiptContents(
            bundleId: "com.example.game", appVersion: "1.0", purchases: [Self.contents.purchases[2]])
        let answer = standIn.answer(Self.request(store.receipt(coins), password: nil), now: 0)
        #expect(answer["status"]?.int64Value == 0)
        #expect(
            answer["latest_receipt_info"] == nil, "Apple sends latest_receipt_info only for receipts with subscriptions"
        )
        // An app the stand-in has no secret for: any password is wrong.
        let stranger = AppReceiptContents(
            bundleId: "com.example.other", appVersion: "1.0", purchases: [Self.contents.purchases[2]])
        #expect(standIn.answer(Self.request(store.receipt(stranger)), now: 0)["status"]?.int64Value == 21004)
    }

    // MARK: - helpers

    static func run(_ executable: String, _ arguments: [String], input: [UInt8]? = nil) throws -> (
        status: Int32, output: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// `openssl asn1parse` of `der` (or of the OCTET STRING at `strparse`), one line per
    /// element, runs of spaces collapsed: `4:d=1 hl=2 l= 13 cons: SEQUENCE`.
    static func asn1parse(_ der: [UInt8], strparse: Int? = nil) throws -> [String] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("asn1-\(UUID().uuidString).der")
        try Data(der).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try run(
            "/usr/bin/openssl",
            ["asn1parse", "-inform", "DER", "-in", file.path] + (strparse.map { ["-strparse", String($0)] } ?? []))
        #expect(result.status == 0, "\(result.output)")
        return result.output.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
    }
}

enum Base64Decoding {
    static func decode(_ text: String) -> [UInt8] { Array(Data(base64Encoded: text) ?? Data()) }
}
