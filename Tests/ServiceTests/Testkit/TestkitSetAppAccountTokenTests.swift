import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service
@testable import TestStore

/// `PUT /v1/subscriptions/{otid}/app-account-token` (api.md §8) against the test store, every
/// piece a real process: `testkit apple` plays Apple's Set App Account Token, and what the store
/// mints for that chain afterwards carries the token — the current period and later renewals,
/// not the periods before (as Apple) — whether posted by `testkit notify` or fetched by sync.
@Suite(.serialized, .tags(.database)) struct TestkitSetAppAccountTokenTests {
    @Test func theTestStoreTakesTheTokenAndTheChainsLaterFactsCarryIt() throws {
        let world = try TestkitAppleTests.World()
        defer { world.stop() }
        let chain = "2000000001"
        #expect(try world.testkit(["purchase", "--user", "u-1", "--product", TestkitStore.subscription]).status == 0)
        let renewed = try world.testkit(["notify", "--type", "DID_RENEW", "--original-transaction-id", chain])
        #expect(renewed.status == 0, "\(renewed.stderr)")  // 2000000002, the current period

        let token = "5C3F0E4E-2B1A-4D7C-9E8F-0A1B2C3D4E5F"
        let lower = token.lowercased()
        let set = try world.api.request(
            "PUT", "/v1/subscriptions/\(chain)/app-account-token",
            body: JSONValue.object(["appAccountToken": .string(token)]).serialized())
        #expect(set.status == 200, "\(set.text) \(world.apple.stderr)")
        #expect(set.json["userId"]?.stringValue == "u-1", "\(set.text)")
        #expect(set.json["environment"]?.stringValue == "LocalTesting", "\(set.text)")
        #expect(set.json["appAccountToken"]?.stringValue == lower, "\(set.text)")
        let apple = world.apple
        try eventually("\(apple.stderr)", within: 10) {
            apple.stderr.contains("set appAccountToken \(lower) on \(chain)")
        }

        // Apple's state: the current period and the renewal info carry it, the first period not.
        var state = try TestkitStore(dataDirectory: world.data).loadState()
        #expect(state.transactions.map { $0["appAccountToken"]?.stringValue } == [nil, lower])
        #expect(state.renewals[chain]?["appAccountToken"]?.stringValue == lower)
        // Registered for the owner, carried by no recorded transaction yet.
        let registered = try world.api.get("/v1/lookup?appAccountToken=\(lower)")
        #expect(registered.json["userId"]?.stringValue == "u-1", "\(registered.text)")
        #expect(registered.json["originalTransactionId"] == .null, "\(registered.text)")

        // A renewal only Apple knows, then sync: Apple's history answers it with the token.
        let hidden = try world.testkit([
            "notify", "--type", "DID_RENEW", "--original-transaction-id", chain, "--apple-only",
        ])
        #expect(hidden.status == 0, "\(hidden.stderr)")  // 2000000003
        let synced = try world.api.post("/v1/users/u-1/sync", ["transactionId": .string(chain)])
        #expect(synced.status == 200, "\(synced.text)")
        let results = synced.json["transactions"]?.arrayValue ?? []
        #expect(
            results.contains {
                $0["transactionId"]?.stringValue == "2000000003" && $0["result"]?.stringValue == "recorded"
            },
            "\(synced.text)")
        let carried = try world.api.get("/v1/lookup?appAccountToken=\(lower)")
        #expect(carried.json["userId"]?.stringValue == "u-1", "\(carried.text)")
        #expect(
            carried.json["originalTransactionId"]?.stringValue == chain,
            "a recorded transaction carries it now: \(carried.text)")

        // A renewal posted by `testkit notify`: its transaction and renewal info carry it.
        #expect(try world.testkit(["notify", "--type", "DID_RENEW", "--original-transaction-id", chain]).status == 0)
        state = try TestkitStore(dataDirectory: world.data).loadState()
        #expect(state.transactions.map { $0["appAccountToken"]?.stringValue } == [nil, lower, lower, lower])
        let user = try world.api.get("/v1/users/u-1")
        #expect(user.json["subscriptions"]?[0]?["renewal"]?["appAccountToken"]?.stringValue == lower, "\(user.text)")
        let latest = try world.api.get("/v1/lookup?transactionId=2000000004")
        #expect(latest.json["userId"]?.stringValue == "u-1", "\(latest.text)")

        // An id the store never minted is Apple's 4040010, and the state is left alone.
        let unknown = try world.api.request(
            "PUT", "/v1/subscriptions/2999999999/app-account-token",
            body: JSONValue.object(["appAccountToken": .string(token)]).serialized())
        #expect(unknown.status == 404, "not recorded by the service: \(unknown.text)")
        #expect(try TestkitStore(dataDirectory: world.data).loadState() == state)
    }
}
