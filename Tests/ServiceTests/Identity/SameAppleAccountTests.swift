import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §7, `sameAppleAccountAs`: a later purchase from an Apple Account (`appTransactionId`)
/// other users bought with, by a user id with no appAccountToken, links those users in the later
/// user's Customer — a hint for support, recorded as events, never a transfer.
@Suite(.tags(.database)) final class SameAppleAccountTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000
    let appleAccount = "704289572399001"

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func purchase(_ userId: String, _ transactionId: String, product: String, account: String) throws -> JSONValue {
        let now = service.clock.now
        let transaction = Mint.transaction(
            transactionId, product: product, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appTransactionId": .string(account)])
        let answer = try api.purchase(userId, Mint.signed(transaction))
        #expect(answer.status == 200, "\(answer.text)")
        return answer.json
    }

    func hints(_ userId: String) throws -> [String]? {
        try api.user(userId)["sameAppleAccountAs"]?.arrayValue?.compactMap(\.stringValue)
    }

    func sharedEvents(_ userId: String) throws -> [JSONValue] {
        try api.events(userId).filter { $0["type"]?.stringValue == "AppleAccountShared" }
    }

    func indexRows() throws -> [[String]] {
        let connection = try Connection(service.conninfo)
        let rows = try connection.query(
            "SELECT app_transaction_id, user_id FROM proj.apple_accounts ORDER BY 1, 2")
        return (0..<rows.count).map { row in (0..<2).map { rows[row, $0] ?? "" } }
    }

    @Test func aLaterUserWithoutATokenIsLinkedToTheEarlierOnesAndNothingMoves() throws {
        _ = try purchase("u-sa-first", "2710001", product: TestService.removeAds, account: appleAccount)
        #expect(try hints("u-sa-first") == nil)

        let answer = try purchase("u-sa-second", "2710002", product: TestService.removeAds, account: appleAccount)
        #expect(answer["customer"]?["sameAppleAccountAs"] == .array([.string("u-sa-first")]), "\(answer)")
        #expect(try hints("u-sa-second") == ["u-sa-first"])
        // A hint, not a transfer: each keeps their own purchase; the earlier user shows no hint.
        #expect(try api.user("u-sa-first")["nonConsumables"]?[0]?["transactionId"]?.stringValue == "2710001")
        #expect(try api.user("u-sa-second")["nonConsumables"]?[0]?["transactionId"]?.stringValue == "2710002")
        #expect(try hints("u-sa-first") == nil)
        let events = try sharedEvents("u-sa-second")
        #expect(events.count == 1)
        #expect(events.first?["data"]?["appTransactionId"]?.stringValue == appleAccount)
        #expect(events.first?["data"]?["sharedWith"]?.stringValue == "u-sa-first")

        // Posting it again changes nothing; another Apple Account of the first user adds nothing.
        _ = try purchase("u-sa-second", "2710002", product: TestService.removeAds, account: appleAccount)
        _ = try purchase("u-sa-first", "2710003", product: TestService.removeAds, account: "704289572399002")
        #expect(try sharedEvents("u-sa-second").count == 1)

        // A user with a token is one the app names to Apple: no hint, but they are remembered.
        #expect(try api.post("/v1/users/u-sa-token/app-account-token", .object([:])).status == 200)
        _ = try purchase("u-sa-token", "2710004", product: TestService.removeAds, account: appleAccount)
        #expect(try hints("u-sa-token") == nil)
        // A fourth user sees all three before them.
        _ = try purchase("u-sa-fourth", "2710005", product: TestService.removeAds, account: appleAccount)
        #expect(try hints("u-sa-fourth") == ["u-sa-first", "u-sa-second", "u-sa-token"])

        // Replay: same documents, same index; the index still links afterwards.
        let before = try indexRows()
        #expect(
            before == [
                [appleAccount, "u-sa-first"], [appleAccount, "u-sa-fourth"], [appleAccount, "u-sa-second"],
                [appleAccount, "u-sa-token"], ["704289572399002", "u-sa-first"],
            ])
        let documents = try ["u-sa-second", "u-sa-fourth"].map { try api.userBytes($0) }
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
        #expect(try indexRows() == before)
        #expect(try ["u-sa-second", "u-sa-fourth"].map { try api.userBytes($0) } == documents)
        _ = try purchase("u-sa-fifth", "2710006", product: TestService.removeAds, account: "704289572399002")
        #expect(try hints("u-sa-fifth") == ["u-sa-first"])
    }

    /// A notification of a renewal carrying the Apple Account notes the chain's owner too.
    @Test func aNotifiedRenewalLinksTheChainsOwner() throws {
        let now = service.clock.now
        _ = try purchase("u-sa-n1", "2720001", product: TestService.removeAds, account: "704289572399101")
        let monthly = Mint.transaction(
            "2720002", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day,
            ["appTransactionId": .null])
        #expect(try api.purchase("u-sa-n2", Mint.signed(monthly)).status == 200)
        #expect(try hints("u-sa-n2") == nil)
        let renewal = Mint.transaction(
            "2720003", chain: "2720002", product: TestService.monthly, purchase: now + 29 * day,
            expires: now + 59 * day, signed: now, ["appTransactionId": .string("704289572399101")])
        #expect(try api.notify(Mint.notification("DID_RENEW", transaction: renewal)).status == 200)
        #expect(try hints("u-sa-n2") == ["u-sa-n1"])
    }
}
