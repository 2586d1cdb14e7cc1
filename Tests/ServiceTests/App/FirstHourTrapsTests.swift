import AppStore
import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Issue 11, "What was seen" 7, 9, 10 and 11: the traps a new user fell into, each through the
/// real service (PostgreSQL, HTTP).
@Suite(.tags(.database)) struct FirstHourTrapsTests {
    static func eventCount(_ service: TestService) throws -> Int64 {
        let rows = try Connection(service.conninfo).query("SELECT count(*) FROM es.events", [])
        return Int64(rows[0, 0] ?? "") ?? -1
    }

    @Test func aPurchaseResignedLaterIsADuplicateAndAppendsNothing() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        var fields = Mint.transaction(
            "9100001", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day)
        #expect(
            try api.purchase("u-1", Mint.signed(fields)).json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        let before = try Self.eventCount(service)
        // StoreKit hands the app the same transaction re-signed at every launch.
        for offset in [hour, 2 * hour, 3 * hour] {
            fields["signedDate"] = .int(now - day + offset)
            let answer = try api.purchase("u-1", Mint.signed(fields))
            #expect(answer.status == 200)
            #expect(answer.json["transactions"]?[0]?["result"]?.stringValue == "duplicate")
        }
        #expect(try Self.eventCount(service) == before)
        // New content re-signed (a refund) is news.
        fields["signedDate"] = .int(now)
        fields["revocationDate"] = .int(now)
        fields["revocationReason"] = .int(1)
        #expect(
            try api.purchase("u-1", Mint.signed(fields)).json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        #expect(try Self.eventCount(service) == before + 1)
    }

    @Test func theSameIdempotencyKeyForAnotherDebitIsRefusedAndChangesNothing() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        let coins = Mint.transaction(
            "9100101", product: TestService.coins, type: "Consumable", purchase: now, expires: nil, signed: now)
        #expect(try api.purchase("u-1", Mint.signed(coins)).status == 200)
        #expect(try api.debit("u-1", "coins", amount: 30, key: "order-1").json["balance"]?.int64Value == 70)
        #expect(try api.debit("u-1", "coins", amount: 30, key: "order-1").json["result"]?.stringValue == "duplicate")
        for (currency, amount) in [("coins", Int64(40)), ("gems", Int64(30))] {
            let reused = try api.debit("u-1", currency, amount: amount, key: "order-1")
            #expect(reused.status == 422)
            #expect(reused.json["code"]?.stringValue == "idempotency_key_reused")
            #expect(reused.json["firstDebit"]?["amount"]?.int64Value == 30)
        }
        #expect(try api.user("u-1")["balances"]?["coins"]?.int64Value == 70)
    }

    @Test func aRestoredPurchaseThatMovedSaysFromWhom() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        let jws = Mint.signed(
            Mint.transaction(
                "9100201", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day
            ))
        let first = try api.purchase("u-4", jws).json["transactions"]?[0]
        #expect(first?["result"]?.stringValue == "recorded")
        #expect(first?["transferredFrom"] == nil)
        let moved = try api.purchase("u-5", jws).json["transactions"]?[0]
        #expect(moved?["result"]?.stringValue == "duplicate")
        #expect(moved?["transferredFrom"]?.stringValue == "u-4")
        #expect(try api.purchase("u-5", jws).json["transactions"]?[0]?["transferredFrom"] == nil)
        #expect(try api.user("u-4")["entitlements"]?["pro"]?["active"]?.boolValue != true)
    }

    /// A P-256 key that is not the test PKI's, minted by OpenSSL.
    static func foreignSigner() throws -> JWSSigner {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let pem = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let vectors = TestVectors.shared
        return try JWSSigner(privateKeyPEM: pem, chainDER: [vectors.leafDER, vectors.intermediateDER, vectors.rootDER])
    }

    @Test func anAppMixingStoreAndLocalTestingEnvironmentsIsRefusedAtStartUp() throws {
        let forged = try Self.foreignSigner().sign(
            payload: TestVectors.shared.transactionPayload([
                "environment": "Xcode", "productId": .string(TestService.monthly),
            ])
            .serialized())
        // Apple's verifier checks no signature for Xcode data: an app that accepts it as well as
        // Sandbox would give the forger a paying customer.
        for environments in [["Sandbox", "Xcode"], ["Production", "LocalTesting"]] {
            var configuration = TestService.configuration()
            configuration.apps[0].environments = environments
            #expect {
                _ = try TestService(configuration: configuration)
            } throws: { error in
                "\(error)".contains("cannot be mixed") && "\(error)".contains("apps[0].environments")
            }
            let text =
                #"{"apps": [{"bundleId": "b", "appAppleId": 1, "environments": ["\#(environments[0])", "\#(environments[1])"]}]}"#
            #expect(throws: ConfigurationError.self) {
                _ = try Configuration.parse(Array(text.utf8), file: "c.json", baseDirectory: ".")
            }
        }
        // Store environments alone: the forged transaction is refused.
        let store = try TestService()
        defer { store.stop() }
        let refused = try store.client().purchase("u-1", forged)
        #expect(refused.status == 422)
        #expect(refused.json["reason"]?.stringValue == "wrong_environment")
        // A local-testing config of its own takes it (local StoreKit testing, as Apple does).
        var local = TestService.configuration()
        local.apps[0].environments = ["Xcode"]
        let localService = try TestService(configuration: local)
        defer { localService.stop() }
        #expect(try localService.client().purchase("u-1", forged).status == 200)
    }

    @Test func everyJSONAnswerSpellsInstantsAsRFC3339() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        let fields = Mint.transaction(
            "9100301", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day)
        #expect(try api.purchase("u-1", Mint.signed(fields)).status == 200)
        let event = try api.events("u-1").first { $0["type"]?.stringValue == "TransactionRecorded" }
        #expect(event?["data"]?["purchaseDate"]?.stringValue == RFC3339.format(now - day))
        #expect(event?["data"]?["expiresDate"]?.stringValue == RFC3339.format(now + 29 * day))
        let claim = try api.events("u-1").first { $0["type"]?.stringValue == "ChainClaimed" }
        #expect(claim?["data"]?["at"]?.stringValue != nil)
        let chain = try api.get("/v1/subscriptions/9100301").json
        #expect(chain["transactions"]?[0]?["purchaseDate"]?.stringValue == RFC3339.format(now - day))
        #expect(chain["transactions"]?[0]?["signedDate"]?.stringValue == RFC3339.format(now - day))
        #expect(chain["state"]?["expiresAt"]?.stringValue == RFC3339.format(now + 29 * day))
    }

    @Test func aRejectedIngestIsLoggedWithItsReasonAndRequestIdButNotThePayload() throws {
        let service = try TestService()
        defer { service.stop() }
        let forged = try Self.foreignSigner().sign(payload: TestVectors.shared.transactionPayload().serialized())
        let answer = try service.client().purchase("u-1", forged)
        #expect(answer.status == 422)
        let requestId = answer.json["requestId"]?.stringValue ?? "?"
        let line = service.log.text.split(separator: "\n").first { $0.contains("ingest rejected") }
        #expect(line?.contains("reason=signature_mismatch") == true)
        #expect(line?.contains(requestId) == true)
        #expect(!service.log.text.contains(String(forged.prefix(40))))
    }

    @Test func aSubscriptionWithNoRenewalInfoYetShowsItRenews() throws {
        let service = try TestService()
        defer { service.stop() }
        let now = TestVectors.nowMillis
        let jws = Mint.signed(
            Mint.transaction(
                "9100401", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day
            ))
        let subscription = try service.client().purchase("u-1", jws).json["customer"]?["subscriptions"]?[0]
        #expect(subscription?["autoRenew"]?.boolValue == true)
        #expect(subscription?["autoRenewProductId"]?.stringValue == TestService.monthly)
    }

    @Test func aNonRenewingPassEndsAfterItsDurationAndASecondOneStacks() throws {
        var configuration = TestService.configuration()
        configuration.apps[0].products["com.example.pass7"] = .init(
            kind: .nonRenewing, entitlements: ["vip"], grants: [:], duration: "P7D")
        let clock = TestClock()
        let service = try TestService(configuration: configuration, clock: clock)
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        clock.set(now)
        func pass(_ id: String, at: Int64) -> String {
            Mint.signed(
                Mint.transaction(
                    id, product: "com.example.pass7", type: "Non-Renewing Subscription", purchase: at, expires: nil,
                    signed: at))
        }
        #expect(try api.purchase("u-1", pass("9100501", at: now - day)).status == 200)
        #expect(try api.user("u-1")["entitlements"]?["vip"]?["expiresAt"]?.stringValue == RFC3339.format(now + 6 * day))
        // The stored document is served until its valid_until: the pass's end must be one.
        clock.set(now + 6 * day + 1)
        #expect(try api.user("u-1")["entitlements"]?["vip"]?["active"]?.boolValue == false)
        clock.set(now)
        #expect(try api.purchase("u-1", pass("9100502", at: now)).status == 200)
        #expect(
            try api.user("u-1")["entitlements"]?["vip"]?["expiresAt"]?.stringValue == RFC3339.format(now + 13 * day))
        clock.set(now + 10 * day)
        #expect(try api.user("u-1")["entitlements"]?["vip"]?["active"]?.boolValue == true)
        clock.set(now + 13 * day)
        #expect(try api.user("u-1")["entitlements"]?["vip"]?["active"]?.boolValue == false)
    }
}
