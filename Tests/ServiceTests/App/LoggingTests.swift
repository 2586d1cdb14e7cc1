import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Problems name their request, and no secret (API key, shared secret, receipt, JWS) reaches the log.
@Suite(.tags(.database)) final class LoggingTests {
    @Test func internalErrorsAreLoggedByRequestIdAndNoSecretIsEverLogged() throws {
        let apple = try StandInServer([
            "/prod": [(200, #"{"status":21007}"#)], "/sandbox": [(200, VerificationTests.sandboxReceipt)],
        ])
        defer { apple.stop() }
        let service = try TestService(
            configuration: TestService.configuration(verifyReceiptBase: "http://127.0.0.1:\(apple.port)"))
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        let jws = Mint.signed(
            Mint.transaction(
                "9000001", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                signed: now - day))
        let notification = Mint.notification(
            "ONE_TIME_CHARGE",
            transaction: Mint.transaction(
                "9000002", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
                signed: now - day))
        let tampered = String(jws.dropLast(4)) + "AAAA"
        #expect(try api.purchase("u-log", jws).status == 200)
        #expect(try api.notify(notification).status == 200)
        #expect(try api.purchase("u-log", tampered).status == 422)
        #expect(try api.receipt("u-log", VerificationTests.receipt).status == 200)
        #expect(try api.debit("u-log", "coins", amount: 5, key: "k").status == 200)
        #expect(
            try ServiceHTTPClient(port: service.app.port, apiKey: "iap_" + String(repeating: "ab", count: 32)).get(
                "/v1/users/u-log"
            ).status == 401)

        // An event the ledger cannot decode: a 500 that names the request, logged with the same id.
        let admin = try Connection(service.conninfo)
        _ = try admin.execute(
            "INSERT INTO es.events (stream_id, version, type, data) VALUES ('user:u-broken', 1, 'NoSuchEvent', '{}')",
            [])
        // A user stream from before subjects (migration 0047 registers such users by their id).
        _ = try admin.execute("INSERT INTO identity.subjects (user_id, subject) VALUES ('u-broken', 'u-broken')", [])
        let broken = try api.get("/v1/users/u-broken")
        #expect(broken.status == 500)
        #expect(broken.json["code"]?.stringValue == "internal_error")
        let requestId = try #require(broken.json["requestId"]?.stringValue)
        #expect(broken.headers["x-request-id"] == requestId)
        #expect(broken.json["detail"]?.stringValue?.contains("NoSuchEvent") == false)

        let log = service.log.text
        #expect(log.contains(requestId), "the failure is logged under its request id: \(log)")
        var secrets = Array(service.keys.values) + [TestService.sharedSecret, VerificationTests.receipt]
        for token in [jws, notification, tampered] {
            secrets.append(token)
            secrets += token.split(separator: ".").map(String.init).filter { $0.count > 16 }
        }
        for secret in secrets {
            #expect(!log.contains(secret), "a secret reached the log: \(secret.prefix(12))…")
        }
    }
}
