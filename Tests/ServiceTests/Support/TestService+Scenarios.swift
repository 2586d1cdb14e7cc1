import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The replay, projection and analytics suites' use of the one harness: a service whose clock
/// stands still (a replay then renders what the live path rendered), the catalog they were
/// written against, and scenarios driven through real HTTP with the admin-scoped key.
extension TestService {
    /// The catalog the scenarios buy from (no yearly product, no shared secret).
    static var scenarioConfiguration: Configuration {
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

    /// A service for scenarios on a fresh database, or on `other`'s (a restart: stop `other`
    /// first), its clock standing at the instant it starts (or `other`'s).
    static func scenarios(sharing other: TestService? = nil) throws -> TestService {
        try TestService(
            configuration: scenarioConfiguration, clock: other?.clock ?? TestClock(frozenAt: TestVectors.nowMillis),
            sharing: other)
    }

    /// The instant the scenarios' clock stands at.
    var now: Int64 { clock.now }

    // MARK: HTTP

    /// One request over a new connection, with the key holding every scope (`auth: false`: none).
    @discardableResult
    func request(_ method: String, _ path: String, _ body: JSONValue? = nil, auth: Bool = true) throws
        -> (status: Int, json: JSONValue)
    {
        var headers: [(name: String, value: String)] = [("Connection", "close")]
        if auth, let key = keys["all"] { headers.append(("Authorization", "Bearer \(key)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let response = try HTTPTestConnection(port: app.port, receiveTimeout: 120).request(
            method, path, orderedHeaders: headers, body: body?.serialized() ?? (method == "POST" ? [] : nil))
        return (response.status, response.json)
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
                "productId": .string(TestService.monthly), "purchaseDate": .number(String(now - 40 * day)),
                "expiresDate": .number(String(now - 10 * day)),
            ])
        let otid = first["originalTransactionId"]!
        try purchase(
            "\(prefix)-sub",
            [
                "productId": .string(TestService.monthly), "originalTransactionId": otid,
                "purchaseDate": .number(String(now - 10 * day)), "expiresDate": .number(String(now + 20 * day)),
                "transactionReason": .string("RENEWAL"),
            ])
        try notify(
            "DID_RENEW",
            transaction: [
                "productId": .string(TestService.monthly), "originalTransactionId": otid,
                "purchaseDate": .number(String(now - 10 * day)), "expiresDate": .number(String(now + 20 * day)),
            ],
            renewal: ["autoRenewStatus": .number("0")])
        // Coins bought twice, spent twice (one duplicate debit), one purchase refunded.
        try purchase(
            "\(prefix)-coins",
            ["productId": .string(TestService.coins), "type": .string("Consumable"), "expiresDate": .null])
        let refunded = try purchase(
            "\(prefix)-coins",
            ["productId": .string(TestService.coins), "type": .string("Consumable"), "expiresDate": .null])
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
            ["productId": .string(TestService.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        let adsRefund = try purchase(
            "\(prefix)-ads-refund",
            ["productId": .string(TestService.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        var adsRevoked = adsRefund.objectValue!
        adsRevoked["revocationDate"] = .number(String(now - 500))
        adsRevoked["signedDate"] = .number(String(TestVectors.nowMillis + 60_000))
        try purchase("\(prefix)-ads-refund", adsRevoked)
        // A transfer: a second user restores the first one's subscription.
        let moved = try purchase("\(prefix)-from", ["productId": .string(TestService.monthly)])
        let response = try request(
            "POST", "/v1/purchases",
            .object(["userId": .string("\(prefix)-to"), "signedTransaction": .string(TestVectors.shared.sign(moved))]))
        #expect(response.status == 200)
        // An expired subscriber.
        try purchase(
            "\(prefix)-expired",
            [
                "productId": .string(TestService.monthly), "purchaseDate": .number(String(now - 60 * day)),
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
