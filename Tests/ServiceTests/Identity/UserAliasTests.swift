import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §7, aliases: `POST /v1/users/{userId}/aliases` merges another id (the anonymous one an
/// app used before sign-in) into a user as one recorded merge, and every call naming the alias
/// acts on the user from then on, through `asOf`, the feed and replay.
@Suite(.tags(.database)) final class UserAliasTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func alias(_ userId: String, _ alias: JSONValue) throws -> HTTPTestConnection.Response {
        try api.post("/v1/users/\(userId)/aliases", .object(["alias": alias]))
    }

    func coins(_ transactionId: String) -> String {
        let now = service.clock.now
        return Mint.signed(
            Mint.transaction(
                transactionId, product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                signed: now - day))
    }

    func monthly(_ transactionId: String) -> String {
        let now = service.clock.now
        return Mint.signed(
            Mint.transaction(
                transactionId, product: TestService.monthly, purchase: now - day, expires: now + 20 * day,
                signed: now - day))
    }

    func mergeEvents(_ userId: String) throws -> [JSONValue] {
        try api.events(userId).filter { $0["type"]?.stringValue == "AliasMerged" }
    }

    /// Waits (polling, with a deadline) until the test clock has moved past `instant`.
    func clockPasses(_ instant: Int64) throws {
        try eventually("the test clock to pass \(instant)", within: 5, every: 0.001) { service.clock.now > instant }
    }

    /// The anonymous id had a subscription, coins, two debits, a grant and a token; the user had
    /// coins and two debits of their own. Everything moves, the balances add up.
    @Test func theMergeMovesPurchasesBalancesGrantsAndTokens() throws {
        #expect(try api.purchase("anon-a1", monthly("5100001")).status == 200)
        #expect(try api.purchase("anon-a1", coins("5100002")).status == 200)
        #expect(try api.debit("anon-a1", "coins", amount: 30, key: "k-anon").json["balance"]?.int64Value == 70)
        #expect(try api.debit("anon-a1", "coins", amount: 10, key: "k-both").json["balance"]?.int64Value == 60)
        let grant = try api.post("/v1/users/anon-a1/grants", .object(["entitlement": "vip", "duration": "P30D"]))
        #expect(grant.status == 201, "\(grant.text)")
        let token = UUID().uuidString.lowercased()
        #expect(
            try api.post("/v1/users/anon-a1/app-account-token", .object(["appAccountToken": .string(token)])).status
                == 200)
        #expect(try api.purchase("user-a1", coins("5100003")).status == 200)
        #expect(try api.debit("user-a1", "coins", amount: 20, key: "k-user").json["balance"]?.int64Value == 80)
        #expect(try api.debit("user-a1", "coins", amount: 5, key: "k-both").json["balance"]?.int64Value == 75)

        let merged = try alias("user-a1", "anon-a1")
        #expect(merged.status == 200, "\(merged.text)")
        #expect(merged.json["userId"]?.stringValue == "user-a1")
        #expect(merged.json["aliases"] == .array(["anon-a1"]))
        // (100 - 30 - 10) + (100 - 20 - 5) = 60 + 75.
        let customer = try #require(merged.json["customer"])
        #expect(customer["balances"]?["coins"]?.int64Value == 135, "\(customer)")
        #expect(customer["userId"]?.stringValue == "user-a1")
        #expect(customer["subscriptions"]?[0]?["originalTransactionId"]?.stringValue == "5100001")
        #expect(customer["entitlements"]?["pro"]?["active"]?.boolValue == true)
        #expect(customer["entitlements"]?["vip"]?["active"]?.boolValue == true, "\(customer)")
        #expect(try api.get("/v1/subscriptions/5100001").json["owner"]?.stringValue == "user-a1")

        // Every read naming the alias answers the user.
        let read = try api.user("anon-a1")
        #expect(read["userId"]?.stringValue == "user-a1")
        #expect(read["balances"]?["coins"]?.int64Value == 135)
        #expect(try api.userBytes("anon-a1") == (try api.userBytes("user-a1")))
        #expect(try mergeEvents("anon-a1").count == 1)

        // A debit through the alias spends the user's balance and says whose it was.
        let debit = try api.debit("anon-a1", "coins", amount: 35, key: "k-after")
        #expect(debit.status == 200, "\(debit.text)")
        #expect(debit.json["userId"]?.stringValue == "user-a1")
        #expect(debit.json["balance"]?.int64Value == 100)
        #expect(try api.user("user-a1")["balances"]?["coins"]?.int64Value == 100)
        // The alias's keys answer as they did; on a key both used, the user's own answer wins.
        let again = try api.debit("anon-a1", "coins", amount: 30, key: "k-anon")
        #expect(again.json["result"]?.stringValue == "duplicate")
        #expect(again.json["balance"]?.int64Value == 70)
        #expect(try api.debit("user-a1", "coins", amount: 5, key: "k-both").json["result"]?.stringValue == "duplicate")
        #expect(try api.debit("anon-a1", "coins", amount: 10, key: "k-both").status == 422)

        // A purchase posted for the alias is the user's; so is the alias's token.
        let posted = try api.purchase("anon-a1", coins("5100004"))
        #expect(posted.json["userId"]?.stringValue == "user-a1", "\(posted.text)")
        #expect(posted.json["customer"]?["balances"]?["coins"]?.int64Value == 200)
        let now = service.clock.now
        let byToken = Mint.transaction(
            "5100005", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appAccountToken": .string(token)])
        #expect(try api.notify(Mint.notification("ONE_TIME_CHARGE", transaction: byToken)).status == 200)
        #expect(try api.user("user-a1")["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        let tokenCall = try api.post(
            "/v1/users/anon-a1/app-account-token", .object(["appAccountToken": .string(token)]))
        #expect(tokenCall.status == 200, "\(tokenCall.text)")
        #expect(tokenCall.json["userId"]?.stringValue == "user-a1")

        // Again with the same pair: 200, nothing recorded.
        let repeated = try alias("user-a1", "anon-a1")
        #expect(repeated.status == 200)
        #expect(repeated.json["aliases"] == .array(["anon-a1"]))
        #expect(try mergeEvents("user-a1").count == 1)
        // The user's history holds the alias's own stream too.
        let types = try api.events("user-a1").compactMap { $0["type"]?.stringValue }
        #expect(types.contains("MergedInto") && types.contains("PromotionalGranted"), "\(types)")
    }

    @Test func conflictsAre409AndTheSameIdIs400() throws {
        #expect(try alias("user-c1", "anon-c1").status == 200)
        // Already an alias of another user.
        let taken = try alias("user-c2", "anon-c1")
        #expect(taken.status == 409, "\(taken.text)")
        #expect(taken.json["code"]?.stringValue == "alias_conflict")
        // The alias is itself the target of aliases.
        #expect(try alias("user-c2", "user-c1").json["code"]?.stringValue == "alias_conflict")
        // The target is itself an alias (refused, not followed: docs/api.md §7).
        #expect(try alias("anon-c1", "anon-c2").json["code"]?.stringValue == "alias_conflict")
        let same = try alias("user-c3", "user-c3")
        #expect(same.status == 400)
        #expect(same.json["code"]?.stringValue == "invalid_request")
        for bad: JSONValue in ["", .int(1), .null] {
            #expect(try alias("user-c3", bad).status == 400, "\(bad)")
        }
        #expect(try mergeEvents("user-c2").isEmpty)
        #expect(try api.user("anon-c2")["userId"]?.stringValue == "anon-c2")
    }

    @Test func asOfBeforeTheMergeAnswersAsTheTwoWere() throws {
        #expect(try api.purchase("anon-t1", coins("5100101")).status == 200)
        #expect(try api.purchase("user-t1", monthly("5100102")).status == 200)
        let before = service.clock.now
        try clockPasses(before)
        #expect(try alias("user-t1", "anon-t1").status == 200)
        let anonymous = try api.user("anon-t1", asOf: before)
        #expect(anonymous["userId"]?.stringValue == "anon-t1")
        #expect(anonymous["balances"]?["coins"]?.int64Value == 100)
        #expect(anonymous["subscriptions"]?.arrayValue?.isEmpty == true)
        let user = try api.user("user-t1", asOf: before)
        #expect(user["balances"]?["coins"] == nil, "\(user)")
        #expect(user["subscriptions"]?.arrayValue?.count == 1)
        // After the merge, both ids answer the merged user.
        let after = service.clock.now
        for id in ["anon-t1", "user-t1"] {
            let merged = try api.user(id, asOf: after)
            #expect(merged["userId"]?.stringValue == "user-t1")
            #expect(merged["balances"]?["coins"]?.int64Value == 100)
            #expect(merged["subscriptions"]?.arrayValue?.count == 1)
        }
    }

    /// A TRANSFER for each chain that moved, on the user; the feed filtered by the alias is the user's.
    @Test func theFeedEmitsATransferForEachMovedChainAndReplayKeepsTheMerge() throws {
        #expect(try api.purchase("anon-f1", monthly("5100201")).status == 200)
        #expect(try api.purchase("anon-f1", coins("5100202")).status == 200)
        #expect(try api.purchase("user-f1", coins("5100203")).status == 200)
        #expect(try alias("user-f1", "anon-f1").status == 200)
        let changes = try ChangeFeedTests.feed(api, userId: "user-f1", settled: service.conninfo)
        let transfers = changes.filter { $0["type"]?.stringValue == "TRANSFER" }
        #expect(transfers.compactMap { $0["originalTransactionId"]?.stringValue }.sorted() == ["5100201", "5100202"])
        for transfer in transfers {
            #expect(transfer["userId"]?.stringValue == "user-f1")
            #expect(transfer["details"] == .object(["from": "anon-f1", "to": "user-f1"]), "\(transfer)")
        }
        // Filtered by the alias: the user's changes and the alias's from before the merge.
        let byAlias = try ChangeFeedTests.feed(api, userId: "anon-f1")
        #expect(byAlias.compactMap { $0["cursor"]?.stringValue } == changes.compactMap { $0["cursor"]?.stringValue })
        #expect(
            byAlias.contains { $0["userId"]?.stringValue == "anon-f1" && $0["type"]?.stringValue == "INITIAL_PURCHASE" }
        )

        // Replay: nothing to change; the alias index (lost here on purpose), chain owners and
        // tokens come back the same.
        let document = try api.userBytes("user-f1")
        let rowsBefore = try aliasRows()
        #expect(rowsBefore.map { Array($0.prefix(2)) } == [["anon-f1", "user-f1"]])
        let dry = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(dry.json["changedUserCount"]?.int64Value == 0, "\(dry.text)")
        _ = try Connection(service.conninfo).execute("DELETE FROM proj.user_aliases")
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
        #expect(try aliasRows() == rowsBefore)
        #expect(
            try JSONValue.parse(api.userBytes("user-f1"))["balances"] == (try JSONValue.parse(document))["balances"])
        #expect(try api.get("/v1/subscriptions/5100201").json["owner"]?.stringValue == "user-f1")
        #expect(try api.user("anon-f1")["balances"]?["coins"]?.int64Value == 200)
        #expect(try ownerRows(of: "anon-f1") == 0)
    }

    func aliasRows() throws -> [[String]] {
        let connection = try Connection(service.conninfo)
        let rows = try connection.query(
            "SELECT alias, user_id, merged_seq::text, merged_at::text FROM proj.user_aliases ORDER BY 1")
        return (0..<rows.count).map { row in (0..<4).map { rows[row, $0] ?? "" } }
    }

    func ownerRows(of userId: String) throws -> Int {
        let connection = try Connection(service.conninfo)
        let rows = try connection.query("SELECT count(*)::text FROM proj.chain_owners WHERE user_id = $1", [userId])
        return Int(rows[0, 0] ?? "") ?? -1
    }
}
