import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §7, tokens: `POST /v1/users/{userId}/app-account-token` mints or registers a user's
/// appAccountToken as an event, and Apple's facts carrying a registered token belong to its user
/// (a notification of a purchase the app never posted included), through replay and `asOf`.
@Suite(.tags(.database)) final class AppAccountTokenTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func token(_ userId: String, _ body: [String: JSONValue] = [:]) throws -> HTTPTestConnection.Response {
        try api.post("/v1/users/\(userId)/app-account-token", .object(body))
    }

    func tokenEvents(_ userId: String) throws -> [JSONValue] {
        try api.events(userId).filter { $0["type"]?.stringValue == "AppAccountTokenRegistered" }
    }

    /// Lowercase 8-4-4-4-12 hex with version 4 and the RFC 4122 variant.
    static func isV4(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard parts.map(\.count) == [8, 4, 4, 4, 12] else { return false }
        guard text.unicodeScalars.allSatisfy({ "0123456789abcdef-".unicodeScalars.contains($0) }) else { return false }
        return parts[2].hasPrefix("4") && "89ab".contains(parts[3].first!)
    }

    /// Waits (polling, with a deadline) until the test clock has moved past `instant`, so two
    /// events get distinct instants for `asOf`.
    func clockPasses(_ instant: Int64) throws {
        try eventually("the test clock to pass \(instant)", within: 5, every: 0.001) { service.clock.now > instant }
    }

    @Test func theFirstCallMintsARandomTokenAndEveryLaterCallAnswersIt() throws {
        let first = try token("u-t1")
        #expect(first.status == 200, "\(first.text)")
        #expect(first.json["userId"]?.stringValue == "u-t1")
        let minted = try #require(first.json["appAccountToken"]?.stringValue)
        #expect(Self.isV4(minted), "\(minted)")
        let again = try token("u-t1")
        #expect(again.status == 200)
        #expect(again.json["appAccountToken"]?.stringValue == minted)
        // One event, minted; the second call appended nothing.
        let events = try tokenEvents("u-t1")
        #expect(events.count == 1)
        #expect(events.first?["data"]?["appAccountToken"]?.stringValue == minted)
        #expect(events.first?["data"]?["minted"]?.boolValue == true)
        // Another user's minted token is another one.
        let other = try #require(try token("u-t1b").json["appAccountToken"]?.stringValue)
        #expect(other != minted)
    }

    @Test func registeringTokensTheAppUsesComparesThemCaseInsensitively() throws {
        let minted = try #require(try token("u-t2").json["appAccountToken"]?.stringValue)
        let own = UUID().uuidString  // uppercase, as Foundation writes it
        let registered = try token("u-t2", ["appAccountToken": .string(own)])
        #expect(registered.status == 200, "\(registered.text)")
        #expect(registered.json["appAccountToken"]?.stringValue == own.lowercased())
        // Again, in the other case: nothing changes.
        let again = try token("u-t2", ["appAccountToken": .string(own.lowercased())])
        #expect(again.status == 200)
        #expect(again.json["appAccountToken"]?.stringValue == own.lowercased())
        let events = try tokenEvents("u-t2")
        #expect(events.compactMap { $0["data"]?["appAccountToken"]?.stringValue } == [minted, own.lowercased()])
        #expect(events.compactMap { $0["data"]?["minted"]?.boolValue } == [true, false])
        // {} still answers the minted token, not the registered one.
        #expect(try token("u-t2").json["appAccountToken"]?.stringValue == minted)
    }

    @Test func anotherUsersTokenIs409AndANonUUIDIs400() throws {
        let own = UUID().uuidString.lowercased()
        #expect(try token("u-t3a", ["appAccountToken": .string(own)]).status == 200)
        let taken = try token("u-t3b", ["appAccountToken": .string(own.uppercased())])
        #expect(taken.status == 409, "\(taken.text)")
        #expect(taken.json["code"]?.stringValue == "app_account_token_taken")
        #expect(taken.text.contains("u-t3a") == false, "the owner is not revealed: \(taken.text)")
        for bad: JSONValue in ["not-a-uuid", "", .string(own + "0"), .int(1), .null] {
            let refused = try token("u-t3b", ["appAccountToken": bad])
            #expect(refused.status == 400, "\(bad): \(refused.text)")
            #expect(refused.json["code"]?.stringValue == "invalid_request")
        }
        #expect(try token("u-t3b", ["other": "x"]).status == 400)
        #expect(try tokenEvents("u-t3b").isEmpty)
        // The minted token of a user can never be registered by another.
        let minted = try #require(try token("u-t3c").json["appAccountToken"]?.stringValue)
        #expect(
            try token("u-t3b", ["appAccountToken": .string(minted)]).json["code"]?.stringValue
                == "app_account_token_taken")
    }

    /// The heart of §7: Apple's notification of a first purchase the app never posted lands on the
    /// token's user, the chain's renewal stays with them, `asOf` and replay agree.
    @Test func aNotificationCarryingARegisteredTokenIsClaimedByItsUserAtOnce() throws {
        let now = service.clock.now
        let beforeRegistration = service.clock.now
        try clockPasses(beforeRegistration)
        let minted = try #require(try token("u-t4").json["appAccountToken"]?.stringValue)
        try clockPasses(service.clock.now)
        let beforePurchase = service.clock.now
        try clockPasses(beforePurchase)
        // Signed with the token in upper case: tokens compare case-insensitively.
        let first = Mint.transaction(
            "2600001", product: TestService.monthly, purchase: now - 10 * day, expires: now + 20 * day,
            signed: now - 10 * day, ["appAccountToken": .string(minted.uppercased())])
        #expect(try api.notify(Mint.notification("SUBSCRIBED", "INITIAL_BUY", transaction: first)).status == 200)
        let customer = try api.user("u-t4")
        let subscription = try #require(customer["subscriptions"]?[0], "\(customer)")
        #expect(subscription["originalTransactionId"]?.stringValue == "2600001")
        #expect(customer["entitlements"]?["pro"]?["active"]?.boolValue == true)
        #expect(try api.get("/v1/subscriptions/2600001").json["owner"]?.stringValue == "u-t4")
        // The claim is the usual ChainClaimed event on the user's stream.
        let timeline = try api.events("u-t4")
        #expect(timeline.first?["type"]?.stringValue == "AppAccountTokenRegistered")
        let claimed = timeline.filter { $0["type"]?.stringValue == "ChainClaimed" }
        #expect(claimed.count == 1)
        #expect(claimed.first?["data"]?["originalTransactionId"]?.stringValue == "2600001", "\(claimed)")
        #expect(claimed.first?["data"]?["userId"]?.stringValue == "u-t4")
        // Nobody named by the token itself got anything.
        #expect(try api.user(minted)["subscriptions"]?.arrayValue?.isEmpty == true)
        #expect(try api.user(minted.uppercased())["subscriptions"]?.arrayValue?.isEmpty == true)

        // The renewal (no token on it) follows the chain's owner.
        let renewal = Mint.transaction(
            "2600002", chain: "2600001", product: TestService.monthly, purchase: now + 20 * day,
            expires: now + 50 * day,
            signed: now)
        #expect(try api.notify(Mint.notification("DID_RENEW", transaction: renewal)).status == 200)
        let renewed = try api.user("u-t4")
        #expect(renewed["subscriptions"]?[0]?["expiresAt"]?.stringValue == RFC3339.format(now + 50 * day), "\(renewed)")

        // asOf: before the registration and before the purchase, the user had no subscription.
        for instant in [beforeRegistration, beforePurchase] {
            let earlier = try api.user("u-t4", asOf: instant)
            #expect(earlier["subscriptions"]?.arrayValue?.isEmpty == true, "\(earlier)")
            #expect(earlier["entitlements"] == .object([:]), "\(earlier)")
        }

        // Replay: a dry run finds nothing to change; a real one gives the same documents and the
        // same token index, and the token still claims afterwards.
        let document = try api.userBytes("u-t4")
        let dry = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(dry.status == 200, "\(dry.text)")
        #expect(dry.json["changedUserCount"]?.int64Value == 0, "\(dry.text)")
        let tokensBefore = try tokenRows()
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
        #expect(try tokenRows() == tokensBefore)
        #expect(tokensBefore.contains([minted, "u-t4", "true"]))
        let afterReplay = try api.userBytes("u-t4")
        #expect(try JSONValue.parse(afterReplay)["subscriptions"] == (try JSONValue.parse(document))["subscriptions"])
        let later = Mint.transaction(
            "2600101", product: TestService.removeAds, type: "Non-Consumable", purchase: now, expires: nil, signed: now,
            ["appAccountToken": .string(minted)])
        #expect(try api.notify(Mint.notification("ONE_TIME_CHARGE", transaction: later)).status == 200)
        #expect(try api.user("u-t4")["nonConsumables"]?.arrayValue?.count == 1)
    }

    @Test func aRegisteredTokenOnAPurchaseNobodyPostedGoesToItsUserAndTheUserIdTokenStillWorks() throws {
        let now = service.clock.now
        let own = UUID().uuidString.lowercased()
        #expect(try token("u-t5", ["appAccountToken": .string(own)]).status == 200)
        let registered = Mint.transaction(
            "2600201", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appAccountToken": .string(own)])
        #expect(try api.notify(Mint.notification("ONE_TIME_CHARGE", transaction: registered)).status == 200)
        #expect(try api.user("u-t5")["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        // A token nobody registered that is a user id names that user, as before §7.
        let userId = UUID().uuidString.lowercased()
        let byId = Mint.transaction(
            "2600202", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appAccountToken": .string(userId)])
        #expect(try api.notify(Mint.notification("ONE_TIME_CHARGE", transaction: byId)).status == 200)
        #expect(try api.user(userId)["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(try api.user("u-t5")["nonConsumables"]?.arrayValue?.count == 1)
        // A posted purchase still belongs to the user who posts it, whatever its token says.
        let posted = Mint.transaction(
            "2600203", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appAccountToken": .string(own)])
        #expect(try api.purchase("u-t5-other", Mint.signed(posted)).status == 200)
        #expect(try api.get("/v1/subscriptions/2600203").json["owner"]?.stringValue == "u-t5-other")
    }

    /// The rows of `proj.app_account_tokens`, sorted.
    func tokenRows() throws -> [[String]] {
        let connection = try Connection(service.conninfo)
        let rows = try connection.query(
            "SELECT app_account_token, user_id, minted::text FROM proj.app_account_tokens ORDER BY 1")
        return (0..<rows.count).map { row in (0..<3).map { rows[row, $0] ?? "" } }
    }
}
