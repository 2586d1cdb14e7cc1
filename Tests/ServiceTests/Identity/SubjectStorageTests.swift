import EventStore
import Foundation
import JSON
import Ledger
import TestSupport
import Testing

@testable import AppStore
@testable import Infrastructure
@testable import Service

/// The log names users by subject and seals what is personal (docs/architecture.md, "Erasure on
/// an append-only log", first step): a user's stream is `user:<subject>`, every user id in their
/// events is a subject, their free text and keys are sealed with their key; every read, the
/// history, analytics and replay still speak in user ids.
@Suite(.tags(.database)) final class SubjectStorageTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func coins(_ transactionId: String) -> String {
        let now = service.clock.now
        return Mint.signed(
            Mint.transaction(
                transactionId, product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                signed: now - day))
    }

    /// Every text the event log and its bookkeeping hold, as PostgreSQL prints it.
    func logText() throws -> String {
        let connection = try Connection(service.conninfo)
        let rows = try connection.query(
            """
            SELECT coalesce(string_agg(stream_id || ' ' || type || ' ' || data::text || ' ' || metadata::text
                || ' ' || coalesce(payload, ''), E'\\n'), '') FROM es.events
            UNION ALL SELECT coalesce(string_agg(stream_id, ' '), '') FROM es.streams
            UNION ALL SELECT coalesce(string_agg(source || ' ' || external_id || ' ' || stream_id, ' '), '') FROM es.inbox
            """)
        var text = (0..<rows.count).map { rows[$0, 0] ?? "" }.joined(separator: "\n")
        // Signed payloads in clear, decoded (base64url), nested ones too: "in any form".
        let payloads = try connection.query("SELECT payload FROM es.events WHERE payload IS NOT NULL")
        for row in 0..<payloads.count {
            guard let payload = payloads[row, 0], let claims = JWSClaims.of(payload) else { continue }
            text += "\n" + String(decoding: claims.serialized(), as: UTF8.self)
            for nested in ["signedTransactionInfo", "signedRenewalInfo"] {
                if let inner = claims["data"]?[nested]?.stringValue, let decoded = JWSClaims.of(inner) {
                    text += "\n" + String(decoding: decoded.serialized(), as: UTF8.self)
                }
            }
        }
        return text
    }

    /// Runs the analytics catch-up until `probe` finds a row (the xid horizon is the whole
    /// cluster's: under a parallel suite a batch may not be visible at the first try).
    func caughtUp(_ connection: Connection, _ probe: String) throws {
        try eventually(
            "the analytics projection to show the probe's rows",
            within: 60
        ) {
            _ = try? AnalyticsProjector.catchUp(on: connection)
            return ((try? connection.query(probe))?.count ?? 0) > 0
        }
    }

    func subjectRow(of userId: String) throws -> (subject: String, keyLength: Int)? {
        let rows = try Connection(service.conninfo).query(
            "SELECT subject, coalesce(octet_length(key), 0) FROM identity.subjects WHERE user_id = $1", [userId])
        guard rows.count == 1, let subject = rows[0, 0], let length = rows[0, 1].flatMap(Int.init) else { return nil }
        return (subject, length)
    }

    @Test func aNewUsersEventsNameTheirSubjectAndSealWhatTheySaid() throws {
        let user = "alice-7f3a"
        #expect(try api.purchase(user, coins("5300101")).status == 200)
        #expect(try api.purchase(user, coins("5300102")).status == 200)
        let debit = try api.debit(
            user, "coins", amount: 30, key: "alice-7f3a-msg-1", reason: "a hello to bob@example.com")
        #expect(debit.status == 200, "\(debit.text)")
        let grant = try api.post(
            "/v1/users/\(user)/grants",
            .object(["entitlement": "pro", "duration": "P7D", "reason": "goodwill, the outage of Tuesday"]))
        #expect(grant.status == 201, "\(grant.text)")

        // The log holds none of it: not the id, not the key, not the words.
        let log = try logText()
        for secret in [user, "bob@example.com", "goodwill", "msg-1"] {
            #expect(!log.contains(secret), "the log holds \(secret)")
        }
        // It holds the subject, with a 256-bit key kept beside the id.
        let (subject, keyLength) = try #require(try subjectRow(of: user))
        #expect(subject.hasPrefix("s_") && subject.count == 34)
        #expect(keyLength == 32)
        let rows = try Connection(service.conninfo).query(
            "SELECT type, schema_version, data->>'userId', data ? 'sealed', data->>'amount' FROM es.events WHERE stream_id = $1 ORDER BY version",
            ["user:" + subject])
        #expect(
            (0..<rows.count).map { rows[$0, 0] ?? "" } == [
                "ChainClaimed", "ChainClaimed", "BalanceDebited", "PromotionalGranted",
            ])
        #expect((0..<rows.count).allSatisfy { rows[$0, 1] == "2" && rows[$0, 2] == subject })
        // Only what is personal is sealed: a claim has nothing to seal; the debit's amount is in clear.
        #expect((0..<rows.count).map { rows[$0, 3] ?? "" } == ["f", "f", "t", "t"])
        #expect(rows[2, 4] == "30")

        // Every read speaks in the user id, with the words as said.
        let customer = try api.user(user)
        #expect(customer["userId"]?.stringValue == user)
        #expect(customer["balances"]?["coins"]?.int64Value == 170)  // 2 × 100 − 30
        #expect(customer["entitlements"]?["pro"]?["active"]?.boolValue == true)
        let events = try api.events(user)
        let debited = try #require(events.first { $0["type"]?.stringValue == "BalanceDebited" })
        #expect(debited["stream"]?.stringValue == "user:" + user)
        #expect(debited["data"]?["userId"]?.stringValue == user)
        #expect(debited["data"]?["reason"]?.stringValue == "a hello to bob@example.com")
        #expect(debited["data"]?["idempotencyKey"]?.stringValue == "alice-7f3a-msg-1")
        // The same debit again is the same answer (its key is read back from the sealed part).
        let again = try api.debit(
            user, "coins", amount: 30, key: "alice-7f3a-msg-1", reason: "a hello to bob@example.com")
        #expect(again.status == 200 && again.json["balance"] == debit.json["balance"], "\(again.text)")
        #expect(try api.user(user)["balances"]?["coins"]?.int64Value == 170)

        // Replay folds the sealed events to the same documents.
        let document = try api.userBytes(user)
        let dry = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(dry.json["changedUserCount"]?.int64Value == 0, "\(dry.text)")
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200 && replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
        #expect(try api.userBytes(user) == document)
        // Analytics name the user, not the subject.
        let analytics = try Connection(service.conninfo)
        try caughtUp(analytics, "SELECT 1 FROM analytics.balance_movements")
        let movements = try analytics.query(
            "SELECT user_id, amount::text FROM analytics.balance_movements ORDER BY seq")
        #expect(movements.count == 1 && movements[0, 0] == user && movements[0, 1] == "-30")
        let owners = try analytics.query("SELECT DISTINCT user_id FROM analytics.chain_owners")
        #expect(owners.count == 1 && owners[0, 0] == user)
    }

    @Test func aTransferNamesThePreviousOwnerBySubjectAndReadsBackAsTheirId() throws {
        let signed = coins("5300201")
        #expect(try api.purchase("bob-1", signed).status == 200)
        #expect(try api.purchase("carol-1", signed).status == 200)
        let log = try logText()
        #expect(!log.contains("bob-1") && !log.contains("carol-1"))
        let bob = try #require(try subjectRow(of: "bob-1")).subject
        let claims = try api.events("carol-1").filter { $0["type"]?.stringValue == "ChainClaimed" }
        #expect(claims.last?["data"]?["from"]?.stringValue == "bob-1")
        let stored = try Connection(service.conninfo).query(
            "SELECT data->>'from' FROM es.events WHERE type = 'ChainClaimed' AND data ? 'from'")
        #expect(stored.count == 1 && stored[0, 0] == bob)
        #expect(try api.get("/v1/subscriptions/5300201").json["owner"]?.stringValue == "carol-1")
        #expect(try api.user("bob-1")["balances"]?["coins"]?.int64Value ?? 0 == 0)
        #expect(try api.user("carol-1")["balances"]?["coins"]?.int64Value == 100)
    }

    @Test func aUserFromBeforeSubjectsKeepsTheirStreamAndIsSealedFromTheirNextWrite() throws {
        // What migration 0047 found: a user stream named by the id, its events in clear.
        let admin = try Connection(service.conninfo)
        let old = try #require(try api.purchase("legacy-1", coins("5300301")).json["customer"])
        #expect(old["balances"]?["coins"]?.int64Value == 100)
        try service.rewriteAsLegacy("legacy-1")

        // Its next write keys it and is sealed, on the same stream, after the old events.
        let debit = try api.debit("legacy-1", "coins", amount: 5, key: "legacy-1-k", reason: "legacy words")
        #expect(debit.status == 200, "\(debit.text)")
        #expect(try subjectRow(of: "legacy-1")?.keyLength == 32)
        let rows = try admin.query(
            "SELECT type, schema_version, data ? 'sealed' FROM es.events WHERE stream_id = 'user:legacy-1' ORDER BY version"
        )
        #expect(
            (0..<rows.count).map { "\(rows[$0, 0]!) \(rows[$0, 1]!) \(rows[$0, 2]!)" }
                == ["ChainClaimed 1 f", "BalanceDebited 2 t"])
        #expect(!(try logText()).contains("legacy words"))
        #expect(try api.user("legacy-1")["balances"]?["coins"]?.int64Value == 95)
        let types = try api.events("legacy-1").compactMap { $0["type"]?.stringValue }
        #expect(types.contains("ChainClaimed") && types.contains("BalanceDebited"))
        let replay = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
    }

    @Test func aTokenIsStoredByItsSubjectAndThePayloadsCarryingItAreSealed() throws {
        let now = service.clock.now
        let token = UUID().uuidString.lowercased()
        #expect(
            try api.post("/v1/users/dana-1/app-account-token", .object(["appAccountToken": .string(token)])).status
                == 200)
        // Apple's facts carry it (in upper case here: tokens compare case-insensitively).
        let transaction = Mint.transaction(
            "5300401", product: TestService.monthly, purchase: now - day, expires: now + 20 * day, signed: now - day,
            ["appAccountToken": .string(token.uppercased())])
        var renewal = Mint.renewal(signed: now - day)
        renewal["appAccountToken"] = .string(token)
        let notification = Mint.notification("SUBSCRIBED", "INITIAL_BUY", transaction: transaction, renewal: renewal)
        #expect(try api.notify(notification).status == 200)

        // Not in the log, in any case, nor the user id; three payloads carried it and are sealed.
        let log = try logText()
        for secret in [token, token.uppercased(), "dana-1"] {
            #expect(!log.contains(secret), "the log holds \(secret)")
        }
        let admin = try Connection(service.conninfo)
        let rows = try admin.query("SELECT token, subject FROM identity.tokens")
        #expect(rows.count == 1 && rows[0, 0] == token && rows[0, 1]?.hasPrefix("t_") == true)
        let sealed = try admin.query("SELECT type FROM es.events WHERE payload LIKE 'sealed:%' ORDER BY seq")
        #expect(
            Set((0..<sealed.count).compactMap { sealed[$0, 0] })
                == ["NotificationReceived", "TransactionRecorded", "RenewalInfoRecorded"])
        let stored = try admin.query(
            "SELECT DISTINCT data->>'appAccountToken' FROM es.events WHERE data ? 'appAccountToken'")
        #expect(stored.count == 1 && stored[0, 0] == rows[0, 1])

        // Every read gives the token back: the user's document, history, support lookup, analytics.
        let customer = try api.user("dana-1")
        #expect(customer["subscriptions"]?[0]?["renewal"]?["appAccountToken"]?.stringValue == token, "\(customer)")
        let registered = try api.events("dana-1").first { $0["type"]?.stringValue == "AppAccountTokenRegistered" }
        #expect(registered?["data"]?["appAccountToken"]?.stringValue == token)
        let found = try api.get("/v1/lookup?appAccountToken=" + token)
        #expect(
            found.json["userId"]?.stringValue == "dana-1"
                && found.json["originalTransactionId"]?.stringValue == "5300401",
            "\(found.text)")
        try caughtUp(admin, "SELECT 1 FROM analytics.renewal_infos")
        let analytics = try admin.query("SELECT app_account_token FROM analytics.renewal_infos")
        #expect(analytics.count == 1 && analytics[0, 0] == token)

        // Replay keeps documents and the token index.
        let document = try api.userBytes("dana-1")
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200 && replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
        #expect(try api.userBytes("dana-1") == document)
        let index = try admin.query("SELECT app_account_token, user_id FROM proj.app_account_tokens")
        #expect(index.count == 1 && index[0, 0] == token && index[0, 1] == "dana-1")
    }
}

extension TestService {
    /// Rewrites a user's events as a database from before migration 0047 holds them: on the
    /// stream named by the id, in clear (schema version 1), their subject the id, no key. The
    /// log is append-only for the service; this is the test's superuser, triggers off.
    func rewriteAsLegacy(_ userId: String) throws {
        let admin = try Connection(conninfo)
        let rows = try admin.query("SELECT subject FROM identity.subjects WHERE user_id = $1", [userId])
        guard rows.count == 1, let subject = rows[0, 0] else {
            throw LegacyFailure(description: "no subject for \(userId)")
        }
        _ = try admin.execute("ALTER TABLE es.events DISABLE TRIGGER USER")
        _ = try admin.query(
            """
            UPDATE es.events SET stream_id = 'user:' || $2, schema_version = 1,
                data = jsonb_set(data, '{userId}', to_jsonb($2::text)) WHERE stream_id = $1
            """, ["user:" + subject, userId])
        _ = try admin.execute("ALTER TABLE es.events ENABLE TRIGGER USER")
        _ = try admin.query(
            "UPDATE es.streams SET stream_id = 'user:' || $2 WHERE stream_id = $1", ["user:" + subject, userId])
        _ = try admin.query("UPDATE identity.subjects SET subject = user_id, key = NULL WHERE user_id = $1", [userId])
    }

    struct LegacyFailure: Error, CustomStringConvertible { var description: String }
}
