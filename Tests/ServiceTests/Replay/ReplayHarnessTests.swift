import EventStore
import Foundation
import JSON
import Ledger
import Synchronization
import TestSupport
import Testing

@testable import Service

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An in-process service on a fresh database, with an admin key, a fixed clock and helpers to
/// drive scenarios through real HTTP (shared by the replay, projection and analytics suites).
final class ReplayHarness: Sendable {
    static let monthly = "com.example.monthly"
    static let coins = "com.example.coins100"
    static let removeAds = "com.example.removeads"

    let conninfo: String
    let app: ServiceApp
    let key: String
    let now: Int64

    static var configuration: Configuration {
        var configuration = Configuration.empty
        configuration.trustedRootsDER = [TestVectors.shared.rootDER]
        configuration.apps = [
            Configuration.App(
                bundleId: TestVectors.bundleId, appAppleId: TestVectors.appAppleId,
                environments: ["Sandbox", "Production"], sharedSecret: nil,
                products: [
                    monthly: .init(kind: .subscription, entitlements: ["pro"], grants: [:]),
                    coins: .init(kind: .consumable, entitlements: [], grants: ["coins": 100]),
                    removeAds: .init(kind: .nonConsumable, entitlements: ["no_ads"], grants: [:]),
                ])
        ]
        return configuration
    }

    init(conninfo existing: String? = nil) throws {
        conninfo = try existing ?? TestDatabase.shared.freshDatabase()
        let now = TestVectors.nowMillis
        self.now = now
        var options = ServiceApp.Options()
        // IAP_TEST_DATABASE_VIA=pgbouncer: through PgBouncer in transaction mode.
        (options.databaseURL, options.databasePoolMode) = try PgBouncer.serviceTarget(for: conninfo)
        options.port = 0
        options.threads = 4
        options.configuration = Self.configuration
        options.clock = { now }
        options.logger = .silent
        app = try ServiceApp.start(options)
        let connection = try Connection(conninfo)
        key = try APIKeys().create(
            name: "replay-\(UUID().uuidString.prefix(8))", scopes: ["read", "write", "admin"], on: connection)
    }

    deinit { app.stop() }

    // MARK: HTTP

    @discardableResult
    func request(_ method: String, _ path: String, _ body: JSONValue? = nil, auth: Bool = true) throws
        -> (status: Int, json: JSONValue)
    {
        var request = URLRequest(url: URL(string: app.url + path)!)
        request.httpMethod = method
        request.timeoutInterval = 120
        if auth { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = Data(body.serialized())
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let box = Mutex<(Int, Data)?>(nil)
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, _ in
            box.withLock { $0 = ((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()) }
            done.signal()
        }.resume()
        done.wait()
        let (status, data) = box.withLock { $0 }!
        return (status, (try? JSONValue.parse(Array(data))) ?? .null)
    }

    /// Posts a signed transaction for `user`; answers the transaction payload used.
    @discardableResult
    func purchase(_ user: String, _ fields: [String: JSONValue] = [:]) throws -> JSONValue {
        let payload = TestVectors.shared.transactionPayload(fields)
        let response = try request(
            "POST", "/v1/purchases",
            .object(["userId": .string(user), "signedTransaction": .string(TestVectors.shared.sign(payload))]))
        #expect(response.status == 200, "purchase for \(user): \(response.json)")
        return payload
    }

    func notify(
        _ type: String, subtype: String? = nil, transaction: [String: JSONValue]?, renewal: [String: JSONValue]? = nil
    ) throws {
        let signed = TestVectors.shared.signedNotification(
            type: type, subtype: subtype, transaction: transaction, renewal: renewal)
        let response = try request(
            "POST", "/v1/notifications/apple", .object(["signedPayload": .string(signed)]), auth: false)
        #expect(response.status == 200, "notification \(type): \(response.json)")
    }

    @discardableResult
    func debit(_ user: String, _ amount: Int, key idempotencyKey: String) throws -> (status: Int, json: JSONValue) {
        try request(
            "POST", "/v1/users/\(user)/balances/coins/debit",
            .object([
                "amount": .number(String(amount)), "idempotencyKey": .string(idempotencyKey), "reason": .string("test"),
            ]))
    }

    // MARK: Scenarios

    /// Purchases, a renewal, renewal info by notification, consumables and debits, a refund by
    /// notification, non-consumables, and a transfer. Answers the users it created.
    @discardableResult
    func runScenarios(prefix: String = "u") throws -> [String] {
        let day: Int64 = 86_400_000
        // Subscriber who renews (a second period of the same chain, then a DID_RENEW notification).
        let first = try purchase(
            "\(prefix)-sub",
            [
                "productId": .string(Self.monthly), "purchaseDate": .number(String(now - 40 * day)),
                "expiresDate": .number(String(now - 10 * day)),
            ])
        let otid = first["originalTransactionId"]!
        try purchase(
            "\(prefix)-sub",
            [
                "productId": .string(Self.monthly), "originalTransactionId": otid,
                "purchaseDate": .number(String(now - 10 * day)), "expiresDate": .number(String(now + 20 * day)),
                "transactionReason": .string("RENEWAL"),
            ])
        try notify(
            "DID_RENEW",
            transaction: [
                "productId": .string(Self.monthly), "originalTransactionId": otid,
                "purchaseDate": .number(String(now - 10 * day)), "expiresDate": .number(String(now + 20 * day)),
            ],
            renewal: ["autoRenewStatus": .number("0")])
        // Coins bought twice, spent twice (one duplicate debit), one purchase refunded.
        try purchase(
            "\(prefix)-coins", ["productId": .string(Self.coins), "type": .string("Consumable"), "expiresDate": .null])
        let refunded = try purchase(
            "\(prefix)-coins", ["productId": .string(Self.coins), "type": .string("Consumable"), "expiresDate": .null])
        try debit("\(prefix)-coins", 30, key: "order-1")
        try debit("\(prefix)-coins", 30, key: "order-1")
        try debit("\(prefix)-coins", 50, key: "order-2")
        var revoked = refunded.objectValue!
        revoked["revocationDate"] = .number(String(now - 1000))
        revoked["revocationReason"] = .number("0")
        revoked["signedDate"] = .number(String(TestVectors.nowMillis + 60_000))
        try notify("REFUND", transaction: revoked)
        // Non-consumable owner, and one whose purchase gets refunded.
        try purchase(
            "\(prefix)-ads",
            ["productId": .string(Self.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        let adsRefund = try purchase(
            "\(prefix)-ads-refund",
            ["productId": .string(Self.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        var adsRevoked = adsRefund.objectValue!
        adsRevoked["revocationDate"] = .number(String(now - 500))
        adsRevoked["signedDate"] = .number(String(TestVectors.nowMillis + 60_000))
        try purchase("\(prefix)-ads-refund", adsRevoked)
        // A transfer: a second user restores the first one's subscription.
        let moved = try purchase("\(prefix)-from", ["productId": .string(Self.monthly)])
        let response = try request(
            "POST", "/v1/purchases",
            .object(["userId": .string("\(prefix)-to"), "signedTransaction": .string(TestVectors.shared.sign(moved))]))
        #expect(response.status == 200)
        // An expired subscriber.
        try purchase(
            "\(prefix)-expired",
            [
                "productId": .string(Self.monthly), "purchaseDate": .number(String(now - 60 * day)),
                "expiresDate": .number(String(now - 30 * day)),
            ])
        return ["sub", "coins", "ads", "ads-refund", "from", "to", "expired"].map { "\(prefix)-\($0)" }
    }

    // MARK: Database

    func connection() throws -> Connection { try Connection(conninfo) }

    /// proj.users as user → (version, document).
    func documents() throws -> [String: String] {
        let rows = try connection().query("SELECT user_id, document FROM proj.users")
        var documents: [String: String] = [:]
        for row in 0..<rows.count { documents[rows[row, 0]!] = rows[row, 1]! }
        return documents
    }

    func owners() throws -> [String: String] {
        let rows = try connection().query("SELECT original_transaction_id, user_id FROM proj.chain_owners")
        var owners: [String: String] = [:]
        for row in 0..<rows.count { owners[rows[row, 0]!] = rows[row, 1]! }
        return owners
    }

    /// Ledger events (what a replay folds): the catalog's versions are on a stream of their own.
    func eventCount() throws -> Int {
        Int(try connection().query("SELECT count(*) AS n FROM es.events WHERE stream_id <> 'catalog'").int64(0, "n")!)
    }
}

@Suite struct ReplayHarnessTests {
    @Test func reportJSONCarriesTheAPIFields() throws {
        var report = ReplayReport(dryRun: true, projections: ["users"])
        report.events = 10
        report.durationMs = 5
        report.changedUsers = [.init(userId: "u-1", fields: ["entitlements"], before: .object([:]), after: nil)]
        let json = try JSONValue.parse(report.jsonBytes())
        #expect(json["events"]?.int64Value == 10)
        #expect(json["durationMs"]?.int64Value == 5)
        #expect(json["changedUsers"]?.arrayValue?.first?["userId"]?.stringValue == "u-1")
        #expect(json["eventsPerSecond"]?.int64Value == 2000)
    }

    @Test func copyTextRowsSplitIntoFieldsUnescapedOnRead() {
        var text: [UInt8] = []
        CopyText.escape("user\t1", into: &text)
        text += Array("\t42\t-7\t".utf8)
        let document = Array("{\"a\":\"x\\\\y\nz\"}".utf8)
        CopyText.escape(bytes: document, into: &text)
        text += Array("\nu2\t1\t2\t{}\n".utf8)
        var rows: [(String, Int64, Int64, [UInt8])] = []
        CopyText.forEachRow(text) { buffer, fields in
            #expect(fields.count == 4)
            rows.append(
                (
                    CopyText.string(buffer, fields[0]), CopyText.integer(buffer, fields[1]),
                    CopyText.integer(buffer, fields[2]), CopyText.field(buffer, fields[3])
                ))
        }
        #expect(rows.count == 2)
        #expect(rows.first?.0 == "user\t1")
        #expect(rows.first?.1 == 42)
        #expect(rows.first?.2 == -7)
        #expect(rows.first?.3 == document)
        #expect(rows.last?.0 == "u2")
        #expect(rows.last?.3 == Array("{}".utf8))
    }

    @Test func copyTextRoundTripsEscapes() {
        var out: [UInt8] = []
        CopyText.escape("a\\b\tc\nd", into: &out)
        let back = out.withUnsafeBufferPointer { CopyText.unescape($0) }
        #expect(String(decoding: back, as: UTF8.self) == "a\\b\tc\nd")
    }

    @Test func progressShowsRateAndETA() {
        let progress = ReplayProgress(phase: "read", events: 250_000, estimatedTotal: 1_000_000, elapsedSeconds: 1)
        let bar = ReplayProgressPrinter.bar(progress)
        #expect(bar.contains("25%") && bar.contains("250000 ev/s") && bar.contains("ETA 3s"))
        let line = ReplayProgressPrinter.line(progress)
        #expect(line == "replay read: 250000/1000000 events, 250000 events/s, 1.0 s elapsed, ETA 3s")
    }
}
