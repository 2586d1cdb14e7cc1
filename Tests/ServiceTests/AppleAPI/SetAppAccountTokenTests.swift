import AppStore
import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `PUT /v1/subscriptions/{originalTransactionId}/app-account-token` (api.md §8): Apple's Set App
/// Account Token (API 1.16) for an old purchase, then the token registered for the chain's owner,
/// so Apple's later facts carrying it are theirs — against the stand-in of Apple's Server API.
@Suite(.tags(.database)) struct SetAppAccountTokenTests {
    func put(_ api: ServiceHTTPClient, _ target: String, _ body: JSONValue) throws -> HTTPTestConnection.Response {
        try api.request("PUT", target, body: body.serialized())
    }

    @Test func appleSetsItInTheChainsEnvironmentAndTheOwnerHoldsItThen() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        let bought = Mint.signed(ExtendTests.monthly("7100001", expires: now + 29 * day, signed: now - day))
        apple.sandbox.addTransaction(bought)
        #expect(try api.purchase("u-set", bought).status == 200)

        let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        let answer = try put(api, "/v1/subscriptions/7100001/app-account-token", ["appAccountToken": .string(token)])
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.json["userId"]?.stringValue == "u-set")
        #expect(answer.json["appAccountToken"]?.stringValue == token.lowercased())
        #expect(answer.json["environment"]?.stringValue == "Sandbox")
        #expect(answer.json["customer"]?["userId"]?.stringValue == "u-set")
        // What Apple was sent, and where: the chain's environment only.
        let sent = try #require(apple.sandbox.requests.first { $0.method == "PUT" })
        #expect(sent.path == "/inApps/v1/transactions/7100001/appAccountToken")
        #expect(try JSONValue.parse(sent.body) == .object(["appAccountToken": .string(token.lowercased())]))
        #expect(apple.production.requests.isEmpty)
        #expect(apple.sandbox.appAccountToken(of: "7100001") == token.lowercased())
        // Registered for the owner as §7's registration is: the token now claims for u-set.
        let registered = try api.post("/v1/users/u-set/app-account-token", ["appAccountToken": .string(token)])
        #expect(registered.json["appAccountToken"]?.stringValue == token.lowercased())
        let events = try api.events("u-set").filter { $0["type"]?.stringValue == "AppAccountTokenRegistered" }
        #expect(events.count == 1)
        let later = Mint.transaction(
            "7100101", product: TestService.removeAds, type: "Non-Consumable", purchase: now, expires: nil, signed: now,
            ["appAccountToken": .string(token.lowercased())])
        #expect(try api.notify(Mint.notification("ONE_TIME_CHARGE", transaction: later)).status == 200)
        #expect(try api.user("u-set")["nonConsumables"]?[0]?["transactionId"]?.stringValue == "7100101")
    }

    @Test func refusalsComeBeforeAppleIsAsked() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client()
        let now = TestVectors.nowMillis
        let token = "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"
        // Not a UUID, no body: 400.
        #expect(try put(api, "/v1/subscriptions/7100201/app-account-token", ["appAccountToken": "nope"]).status == 400)
        #expect(try put(api, "/v1/subscriptions/7100201/app-account-token", .object([:])).status == 400)
        // No such chain: 404.
        let missing = try put(api, "/v1/subscriptions/7100201/app-account-token", ["appAccountToken": .string(token)])
        #expect(missing.status == 404, "\(missing.text)")
        // A chain nobody owns: 409 (no one to register it for).
        let unowned = Mint.transaction(
            "7100301", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day)
        #expect(try api.notify(Mint.notification("SUBSCRIBED", "INITIAL_BUY", transaction: unowned)).status == 200)
        #expect(
            try put(api, "/v1/subscriptions/7100301/app-account-token", ["appAccountToken": .string(token)]).status
                == 409)
        // Another user's token: 409 app_account_token_taken.
        #expect(try api.post("/v1/users/u-other/app-account-token", ["appAccountToken": .string(token)]).status == 200)
        let bought = Mint.signed(ExtendTests.monthly("7100401", expires: now + 29 * day, signed: now - day))
        #expect(try api.purchase("u-mine", bought).status == 200)
        let taken = try put(api, "/v1/subscriptions/7100401/app-account-token", ["appAccountToken": .string(token)])
        #expect(taken.status == 409)
        #expect(taken.json["code"]?.stringValue == "app_account_token_taken")
        #expect(apple.sandbox.requests.allSatisfy { $0.method != "PUT" }, "Apple was never asked")
        #expect(apple.production.requests.allSatisfy { $0.method != "PUT" })
    }
}
