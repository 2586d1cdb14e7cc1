import AppStore
import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Identity
@testable import Infrastructure
@testable import Service

/// api.md §7, `GET /v1/lookup`: the user and chain behind a transactionId, an
/// originalTransactionId or an appAccountToken (from the ledger), or an order ID (asked of
/// Apple's Look Up Order ID — here the stand-in, which checks each token as Apple does — and
/// recorded as `sync` records).
@Suite(.tags(.database)) final class LookupTests {
    let service: TestService
    let api: ServiceHTTPClient

    init() throws {
        service = try TestService()
        api = service.client("read")
    }

    deinit { service.stop() }

    func lookup(_ query: String, _ client: ServiceHTTPClient? = nil) throws -> HTTPTestConnection.Response {
        try (client ?? api).get("/v1/lookup?" + query)
    }

    /// The answer's fields, nulls included, for exact comparisons.
    static func fields(_ response: HTTPTestConnection.Response) -> [String: JSONValue] {
        response.json.objectValue ?? [:]
    }

    @Test func aTransactionIdAndAChainIdAnswerTheChainAndItsOwner() throws {
        let now = service.clock.now
        let writer = service.client()
        let first = Mint.transaction(
            "2700001", product: TestService.monthly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day)
        #expect(try writer.purchase("u-l1", Mint.signed(first)).status == 200)
        let renewal = Mint.transaction(
            "2700002", chain: "2700001", product: TestService.monthly, purchase: now - 10 * day,
            expires: now + 20 * day,
            signed: now - 10 * day)
        #expect(try writer.notify(Mint.notification("DID_RENEW", transaction: renewal)).status == 200)

        let byRenewal = try lookup("transactionId=2700002")
        #expect(byRenewal.status == 200, "\(byRenewal.text)")
        #expect(
            Self.fields(byRenewal) == [
                "userId": "u-l1", "originalTransactionId": "2700001", "transactionId": "2700002",
            ])
        let byFirst = try lookup("transactionId=2700001")
        #expect(
            Self.fields(byFirst) == ["userId": "u-l1", "originalTransactionId": "2700001", "transactionId": "2700001"])
        let byChain = try lookup("originalTransactionId=2700001")
        #expect(byChain.status == 200, "\(byChain.text)")
        #expect(Self.fields(byChain) == ["userId": "u-l1", "originalTransactionId": "2700001"])
        // A renewal's id is no chain.
        #expect(try lookup("originalTransactionId=2700002").status == 404)

        // A chain only a notification brought, nobody claimed: userId null.
        let unclaimed = Mint.transaction(
            "2700011", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        #expect(try writer.notify(Mint.notification("ONE_TIME_CHARGE", transaction: unclaimed)).status == 200)
        #expect(
            Self.fields(try lookup("transactionId=2700011")) == [
                "userId": .null, "originalTransactionId": "2700011", "transactionId": "2700011",
            ])
        #expect(
            Self.fields(try lookup("originalTransactionId=2700011")) == [
                "userId": .null, "originalTransactionId": "2700011",
            ])

        for query in ["transactionId=2799999", "originalTransactionId=2799999"] {
            let missing = try lookup(query)
            #expect(missing.status == 404, "\(query): \(missing.text)")
            #expect(missing.json["code"]?.stringValue == "not_found")
        }
    }

    @Test func anAppAccountTokenAnswersItsUserAndTheChainCarryingIt() throws {
        let now = service.clock.now
        let writer = service.client()
        let token = try #require(
            try writer.post("/v1/users/u-l2/app-account-token", [:]).json["appAccountToken"]?.stringValue)
        // Registered, no transaction carries it yet: the user, no chain. Any case finds it.
        let registered = try lookup("appAccountToken=" + token.uppercased())
        #expect(registered.status == 200, "\(registered.text)")
        #expect(Self.fields(registered) == ["userId": .string("u-l2"), "originalTransactionId": .null])

        let bought = Mint.transaction(
            "2700101", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appAccountToken": .string(token.uppercased())])
        #expect(try writer.notify(Mint.notification("ONE_TIME_CHARGE", transaction: bought)).status == 200)
        #expect(
            Self.fields(try lookup("appAccountToken=" + token)) == [
                "userId": .string("u-l2"), "originalTransactionId": "2700101",
            ])

        // A token nobody registered: the chain carrying it and that chain's owner — here the
        // user whose id is the token, as §7's older rule claims such a chain.
        let stranger = UUID().uuidString.lowercased()
        let unclaimed = Mint.transaction(
            "2700102", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appAccountToken": .string(stranger)])
        #expect(try writer.notify(Mint.notification("ONE_TIME_CHARGE", transaction: unclaimed)).status == 200)
        #expect(
            Self.fields(try lookup("appAccountToken=" + stranger)) == [
                "userId": .string(stranger), "originalTransactionId": "2700102",
            ])
        // … and once someone else posts that purchase (transferPolicy allows), its new owner.
        #expect(try writer.purchase("u-l2b", Mint.signed(unclaimed)).status == 200)
        #expect(
            Self.fields(try lookup("appAccountToken=" + stranger.uppercased())) == [
                "userId": "u-l2b", "originalTransactionId": "2700102",
            ])

        let unknown = try lookup("appAccountToken=" + UUID().uuidString)
        #expect(unknown.status == 404, "\(unknown.text)")
        #expect(unknown.json["code"]?.stringValue == "not_found")
    }

    /// The lookups read the log by migration 0042's indexes, never by walking it: with an
    /// ORDER BY seq and a LIMIT next to the condition PostgreSQL preferred the primary key
    /// backwards (136 ms over 400,000 events, against 0.04 ms). The plans are asked of a log of
    /// 120,000 synthetic events with fresh statistics, as a big log has them.
    @Test func theLogIsReadByItsLookupIndexes() throws {
        let connection = try Connection(service.conninfo)
        _ = try connection.execute(
            """
            INSERT INTO es.events (stream_id, version, type, data)
            SELECT 'chain:' || (3000000000 + c), v, 'TransactionRecorded',
                   jsonb_build_object('transactionId', (3000000000 + c * 10 + v)::text,
                                      'originalTransactionId', (3000000000 + c)::text)
                   || CASE WHEN c % 3 = 0 THEN jsonb_build_object('appAccountToken', md5(c::text)::uuid::text)
                      ELSE '{}'::jsonb END
            FROM generate_series(1, 40000) c, generate_series(1, 3) v
            """)
        _ = try connection.execute("ANALYZE es.events")
        func plan(_ query: Query) throws -> String { try connection.explain(query.sql, query.params) }
        for id in ["3000005002", "3999999999"] {
            let byTransaction = try plan(SupportLookup.chain(ofTransaction: id))
            #expect(byTransaction.contains("events_transaction_id_idx"), "\(byTransaction)")
            #expect(!byTransaction.contains("events_pkey"), "\(byTransaction)")
        }
        let byToken = try plan(SupportLookup.chain(carrying: "94f6d7e0-4a4d-4520-3530-0f18b984988c"))
        #expect(byToken.contains("events_app_account_token_idx"), "\(byToken)")
        #expect(!byToken.contains("events_pkey"), "\(byToken)")
        let chain = try plan(SupportLookup.chainExists("3000000500"))
        #expect(chain.contains("streams_pkey"), "\(chain)")
    }

    @Test func exactlyOneWellFormedParameterOrA400() throws {
        for query in [
            "", "transactionId=1&originalTransactionId=1", "transactionId=1&orderId=MK5TTTVWJH",
            "appAccountToken=\(UUID().uuidString)&orderId=A", "transactionId=12a", "transactionId=",
            "originalTransactionId=-1", "appAccountToken=not-a-uuid", "orderId=", "orderId=MK5-TTT",
            "orderId=%2E%2E%2Fhistory", "userId=u-l3",
        ] {
            let refused = try lookup(query)
            #expect(refused.status == 400, "\(query): \(refused.text)")
            #expect(refused.json["code"]?.stringValue == "invalid_request", "\(query)")
        }
        #expect(try service.client(nil).get("/v1/lookup?transactionId=1").status == 401)
        // An order id needs Apple's Server API: without a key, nothing to ask.
        let unkeyed = try lookup("orderId=MK5TTTVWJH")
        #expect(unkeyed.status == 422, "\(unkeyed.text)")
        #expect(unkeyed.json["code"]?.stringValue == "server_api_not_configured")
    }
}
