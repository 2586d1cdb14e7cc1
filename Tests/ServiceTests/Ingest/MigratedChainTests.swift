import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §8, `previousOriginalTransactionId` (Notifications 2.16): a subscription migrated to a
/// new chain belongs to the owner of the previous one at once, and the subscription answers name
/// the chain it came from.
@Suite(.tags(.database)) final class MigratedChainTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    @Test func theNewChainBelongsToThePreviousOwnerAtOnce() throws {
        let now = service.clock.now
        let old = Mint.transaction(
            "2730001", product: TestService.monthly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day)
        #expect(try api.purchase("u-mig", Mint.signed(old)).status == 200)
        // Apple moves the subscription to a new chain and says so on its first transaction.
        let migrated = Mint.transaction(
            "2730101", product: TestService.monthly, purchase: now - 10 * day, expires: now + 20 * day,
            signed: now - 10 * day, ["previousOriginalTransactionId": .string("2730001")])
        #expect(try api.notify(Mint.notification("MIGRATION", transaction: migrated)).status == 200)

        let customer = try api.user("u-mig")
        let subscriptions = try #require(customer["subscriptions"]?.arrayValue, "\(customer)")
        #expect(subscriptions.compactMap { $0["originalTransactionId"]?.stringValue } == ["2730001", "2730101"])
        #expect(subscriptions[1]["previousOriginalTransactionId"]?.stringValue == "2730001")
        #expect(subscriptions[0]["previousOriginalTransactionId"] == nil)
        #expect(customer["entitlements"]?["pro"]?["active"]?.boolValue == true, "\(customer)")
        #expect(customer["entitlements"]?["pro"]?["originalTransactionId"]?.stringValue == "2730101")
        let chain = try api.get("/v1/subscriptions/2730101").json
        #expect(chain["owner"]?.stringValue == "u-mig", "\(chain)")
        #expect(chain["transactions"]?[0]?["previousOriginalTransactionId"]?.stringValue == "2730001")
        // The claim is the usual event on the owner's stream.
        let claims = try api.events("u-mig").filter { $0["type"]?.stringValue == "ChainClaimed" }
        #expect(claims.compactMap { $0["data"]?["originalTransactionId"]?.stringValue } == ["2730001", "2730101"])

        // The new chain's renewal (no previousOriginalTransactionId on it) keeps the link.
        let renewal = Mint.transaction(
            "2730102", chain: "2730101", product: TestService.monthly, purchase: now + 20 * day,
            expires: now + 50 * day, signed: now)
        #expect(try api.notify(Mint.notification("DID_RENEW", transaction: renewal)).status == 200)
        let renewed = try api.user("u-mig")["subscriptions"]?[1]
        #expect(renewed?["previousOriginalTransactionId"]?.stringValue == "2730001", "\(String(describing: renewed))")
        #expect(renewed?["expiresAt"]?.stringValue == RFC3339.format(now + 50 * day))

        // Replay decides the same from the log alone.
        let dry = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(dry.status == 200, "\(dry.text)")
        #expect(dry.json["changedUserCount"]?.int64Value == 0, "\(dry.text)")
    }

    @Test func aChainMigratedFromAnUnclaimedOneWaitsForItsClaimLikeAnyOther() throws {
        let now = service.clock.now
        let migrated = Mint.transaction(
            "2730201", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day,
            ["previousOriginalTransactionId": .string("2730200")])
        #expect(try api.notify(Mint.notification("MIGRATION", transaction: migrated)).status == 200)
        #expect(try api.get("/v1/subscriptions/2730201").json["owner"] == .null)
        #expect(try api.purchase("u-mig2", Mint.signed(migrated)).status == 200)
        #expect(try api.user("u-mig2")["subscriptions"]?[0]?["previousOriginalTransactionId"]?.stringValue == "2730200")
    }
}
