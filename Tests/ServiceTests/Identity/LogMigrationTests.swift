import AppStore
import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The log migration of `iap-ledger migrate` (docs/architecture.md, "Events already written"):
/// a database from before subjects — users' streams by id, tokens and signed payloads in clear,
/// the feed in clear — is stored again as new writes are, while the service keeps running;
/// every answer stays byte for byte what it was, and the people recorded before can be erased.
@Suite(.tags(.database)) final class LogMigrationTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000
    let lena = "lena-7f3c1a", anon = "anon-lena-2b8e", otto = "otto-5d91c4", nora = "nora-e2c07b"
    let reason = "lena asked support about her move to Lyon"
    let token = UUID().uuidString.lowercased()
    let appleAccount = "7042895999123"

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    /// Lena: coins bought before sign-in under an alias, her token, a subscription Apple told
    /// about with her token (the renewal's uppercased), a debit and a grant with her words, a
    /// purchase that then moved to Otto (a TRANSFER naming both).
    func recordBeforeSubjects() throws {
        let now = service.clock.now
        try ErasureTests.recordPerson(
            lena, alias: anon, token: token, reason: reason, appleAccount: appleAccount, chains: "56001", api: api,
            now: now)
        let moved = Mint.signed(
            Mint.transaction(
                "5600301", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
                signed: now - day))
        #expect(try api.purchase(lena, moved).status == 200)
        #expect(try api.purchase(otto, moved).status == 200)
    }

    /// What every reader sees: documents (as bytes), histories, the feed.
    func answers(_ users: [String]) throws -> [JSONValue] {
        var answers: [JSONValue] = []
        for user in users {
            answers.append(.string(String(decoding: try api.userBytes(user), as: UTF8.self)))
            answers.append(.array(try api.events(user)))
        }
        answers.append(.array(try ChangeFeedTests.feed(api, settled: service.conninfo)))
        return answers
    }

    /// The log and the feed as PostgreSQL prints them, signed payloads in clear decoded.
    func logText() throws -> String {
        let rows = try Connection(service.conninfo).query(
            """
            SELECT stream_id || ' ' || data::text || ' ' || coalesce(payload, '') FROM es.events
            UNION ALL SELECT concat_ws(' ', user_id, details, customer) FROM changes.feed
            UNION ALL SELECT concat_ws(' ', reason, idempotency_key) FROM analytics.balance_movements
            """)
        var text: [String] = []
        for row in 0..<rows.count {
            let line = rows[row, 0] ?? ""
            text.append(line)
            for word in line.split(separator: " ") where word.split(separator: ".").count == 3 {
                if let claims = JWSClaims.of(String(word)) {
                    text.append(String(decoding: claims.serialized(), as: UTF8.self))
                }
                if let nested = JWSClaims.appAccountToken(in: String(word)) { text.append(nested) }
            }
        }
        return text.joined(separator: "\n")
    }

    func migrate() throws -> OpsBinary.Outcome {
        try OpsBinary.run(["migrate"], environment: ["DATABASE_URL": service.conninfo])
    }

    @Test func aLogFromBeforeSubjectsIsSealedWhileTheServiceRunsAndItsPeopleCanBeErased() throws {
        try recordBeforeSubjects()
        try LegacyLog.rewriteAsBeforeSubjects(service.conninfo)
        // The older code's analytics read a debit's reason and key off the log, in clear.
        _ = try Connection(service.conninfo).execute(
            "UPDATE analytics.balance_movements SET reason = $1, idempotency_key = $2 WHERE user_id = $3",
            [reason, "\(lena)-debit-1", lena])
        let legacy = try logText()
        for secret in [lena, anon, otto, token, reason] {
            #expect(legacy.contains(secret), "the legacy log should hold \(secret)")
        }
        // Nora writes after the upgrade, before the migration: her events and changes name
        // Lena (one Apple Account) by Lena's legacy subject, her id.
        let nora = Mint.signed(
            Mint.transaction(
                "5600401", product: TestService.yearly, purchase: service.clock.now,
                expires: service.clock.now + 365 * day,
                signed: service.clock.now, ["appTransactionId": .string(appleAccount)]))
        #expect(try api.purchase(self.nora, nora).status == 200)
        #expect(try api.user(self.nora)["sameAppleAccountAs"] == .array([.string(lena)]))
        let before = try answers([lena, otto, self.nora])
        let money = try ErasureTests.revenue(service.conninfo)
        // An instance starting now says what to run.
        let starting = try TestService(sharing: service)
        starting.stop()
        #expect(starting.log.text.contains("run `iap-ledger migrate` to seal them"), "\(starting.log.text)")
        let refused = try api.request("DELETE", "/v1/users/\(lena)")
        #expect(refused.status == 409 && refused.json["code"]?.stringValue == "erasure_needs_log_migration")
        #expect(refused.json["detail"]?.stringValue?.contains("iap-ledger migrate") == true, "\(refused.text)")

        // The migration, with the service running (it waits on the tables for a moment).
        let outcome = try migrate()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.hasPrefix("sealed the log: "), "\(outcome.stdout)")
        // Lena, her alias and Otto were users by id; one token was in clear.
        #expect(outcome.stdout.hasSuffix("; 3 users and 1 tokens given subjects\n"), "\(outcome.stdout)")

        // Every answer byte for byte as before; the log and the feed hold nobody in clear.
        let after = try answers([lena, otto, self.nora])
        for (index, answer) in after.enumerated() where index < before.count && answer != before[index] {
            Issue.record("answer \(index) changed:\n\(before[index])\n→\n\(answer)")
        }
        let sealed = try logText()
        for secret in [lena, anon, otto, self.nora, token, token.uppercased(), reason, "\(lena)-debit-1"] {
            let lines = sealed.split(separator: "\n").filter { $0.contains(secret) }.prefix(3).map { $0.prefix(400) }
            #expect(lines.isEmpty, "the log, the feed or the analytics still hold \(secret): \(lines)")
        }
        let admin = try Connection(service.conninfo)
        let shapes = try admin.query(
            """
            SELECT (SELECT count(*) FROM identity.subjects WHERE subject = user_id OR key IS NULL),
                (SELECT count(*) FROM es.events WHERE stream_id LIKE 'user:%' AND schema_version <> 2),
                (SELECT count(*) FROM es.streams WHERE stream_id LIKE 'user:%' AND stream_id NOT LIKE 'user:s\\_%'),
                (SELECT count(*) FROM changes.feed WHERE user_id NOT LIKE 's\\_%' OR details NOT LIKE '{"sealed":"%'),
                (SELECT count(*) FROM es.events WHERE payload LIKE 'sealed:%'),
                (SELECT events_rewritten FROM identity.log_sealing)
            """)
        #expect(shapes[0, 0] == "0" && shapes[0, 1] == "0" && shapes[0, 2] == "0" && shapes[0, 3] == "0")
        // The notification, the transaction and the renewal carried the token: three payloads.
        #expect(shapes[0, 4] == "3")
        #expect(outcome.stdout.hasPrefix("sealed the log: \(shapes[0, 5] ?? "?") events"))

        // The service goes on: a write to Lena lands on her new stream; a replay changes nothing.
        #expect(try api.debit(lena, "coins", amount: 1, key: "\(lena)-debit-2").status == 200)
        #expect(try api.user(lena)["balances"]?["coins"]?.int64Value == 89)  // 100 − 10 − 1
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200 && replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
        // Once only, and instances starting afterwards say nothing of it.
        let again = try migrate()
        #expect(again.status == 0 && again.stdout == "nothing to apply\n", "\(again.stdout) \(again.stderr)")
        let later = try TestService(sharing: service)
        later.stop()
        #expect(!later.log.text.contains("iap-ledger migrate"), "\(later.log.text)")

        // And now Lena can be erased: nowhere in the database, her money unchanged.
        #expect(try api.request("DELETE", "/v1/users/\(lena)").status == 200)
        let dump = try ErasureTests.dump(service.conninfo)
        for secret in [lena, anon, token, token.uppercased(), reason, "\(lena)-debit-1"] {
            #expect(!dump.contains(secret), "the dump holds \(secret)")
        }
        #expect(try ErasureTests.revenue(service.conninfo) == money)
    }
}
