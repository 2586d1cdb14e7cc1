import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import AppStore
@testable import Infrastructure
@testable import Service

/// api.md §7, `DELETE /v1/users/{userId}`: after an erasure nothing in the database holds the
/// person's id, their alias or their token in any form — a `pg_dump` of the whole database,
/// decoded, does not contain them — while the money stays under an opaque id, the id reads as
/// never seen, and a replay keeps it so.
@Suite(.tags(.database)) final class ErasureTests {
    let service: TestService
    let api: ServiceHTTPClient
    let user = "erin-91c4", alias = "anon-erin-7d2a", reason = "erin told support about her divorce"
    let token = UUID().uuidString.lowercased()
    let appleAccount = "7042895999001"

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func erase(_ userId: String, client: ServiceHTTPClient? = nil) throws -> ServiceHTTPClient.Response {
        try (client ?? api).request("DELETE", "/v1/users/\(userId)")
    }

    /// Erin (`recordPerson`); Frank bought with her Apple Account later, so his document names her.
    func recordErin() throws {
        try Self.recordPerson(
            user, alias: alias, token: token, reason: reason, appleAccount: appleAccount, chains: "54002", api: api,
            now: service.clock.now)
        let now = service.clock.now
        let frank = Mint.signed(
            Mint.transaction(
                "5400301", product: TestService.yearly, purchase: now, expires: now + 365 * day, signed: now,
                ["appTransactionId": .string(appleAccount)]))
        #expect(try api.purchase("frank-3b", frank).status == 200)
        #expect(try api.user("frank-3b")["sameAppleAccountAs"]?.arrayValue?.compactMap(\.stringValue) == [user])
    }

    /// A person as the erasure suites record them: coins bought before sign-in under an alias,
    /// a token registered, a subscription Apple told about carrying the token (the renewal's
    /// uppercased) with their Apple Account, the alias merged, a debit and a grant with their
    /// words. Transaction ids are `chains` + 01 (coins) and + 02 (the subscription).
    static func recordPerson(
        _ user: String, alias: String, token: String, reason: String, appleAccount: String, chains: String,
        api: ServiceHTTPClient, now: Int64
    ) throws {
        let day: Int64 = 86_400_000
        let coins = Mint.signed(
            Mint.transaction(
                chains + "01", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                signed: now - day))
        #expect(try api.purchase(alias, coins).status == 200)
        #expect(
            try api.post("/v1/users/\(user)/app-account-token", .object(["appAccountToken": .string(token)])).status
                == 200)
        let monthly = Mint.transaction(
            chains + "02", product: TestService.monthly, purchase: now - day, expires: now + 20 * day,
            signed: now - day,
            [
                "appAccountToken": .string(token), "appTransactionId": .string(appleAccount), "price": .int(9990),
                "currency": "EUR",
            ])
        var renewal = Mint.renewal(signed: now - day)
        renewal["appAccountToken"] = .string(token.uppercased())
        #expect(
            try api.notify(Mint.notification("SUBSCRIBED", "INITIAL_BUY", transaction: monthly, renewal: renewal))
                .status == 200)
        #expect(try api.post("/v1/users/\(user)/aliases", .object(["alias": .string(alias)])).status == 200)
        #expect(try api.debit(user, "coins", amount: 10, key: "\(user)-debit-1", reason: reason).status == 200)
        let grant = try api.post(
            "/v1/users/\(user)/grants", .object(["entitlement": "pro", "duration": "P7D", "reason": .string(reason)]))
        #expect(grant.status == 201, "\(grant.text)")
    }

    /// Revenue as the analyst reads it: count, sum of amounts and of proceeds, once the
    /// analytics caught up with the log.
    func revenue() throws -> [String] { try Self.revenue(service.conninfo) }

    static func revenue(_ conninfo: String) throws -> [String] {
        let connection = try Connection(conninfo)
        var found: [String] = []
        try eventually(
            "the analytics projector to catch up and the revenue movements to be read",
            within: 60
        ) {
            _ = try? AnalyticsProjector.catchUp(on: connection)
            guard
                let lag = try? ProjectionLag.lag(
                    after: AnalyticsProjector.position(on: connection), on: connection),
                lag == 0,
                let rows = try? connection.query(
                    """
                    SELECT count(*)::text, coalesce(sum(amount_milli), 0)::text, coalesce(sum(proceeds_milli), 0)::text
                    FROM analytics.revenue_movements
                    """)
            else { return false }
            found = (0..<3).map { rows[0, $0] ?? "" }
            return true
        }
        return found
    }

    /// The whole database as `pg_dump` writes it, with every signed payload and bytea decoded.
    func dump() throws -> String { try Self.dump(service.conninfo) }

    static func dump(_ conninfo: String) throws -> String {
        let program = try #require(EmbeddedPostgres.clientProgram("pg_dump"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = ["--dbname=" + conninfo, "--no-owner"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        var text = String(decoding: data, as: UTF8.self)
        var decoded: [String] = []
        for word in text.split(whereSeparator: { " \t\n\",{}[]".contains($0) }) {
            let word = String(word)
            if word.hasPrefix("\\\\x") || word.hasPrefix("\\x"),
                let bytes = Hex.decode(String(word.drop { $0 == "\\" }))
            {
                decoded.append(String(decoding: bytes, as: UTF8.self))
            }
            guard word.split(separator: ".").count == 3, let claims = JWSClaims.of(word) else { continue }
            decoded.append(String(decoding: claims.serialized(), as: UTF8.self))
            for nested in ["signedTransactionInfo", "signedRenewalInfo"] {
                if let inner = claims["data"]?[nested]?.stringValue, let more = JWSClaims.of(inner) {
                    decoded.append(String(decoding: more.serialized(), as: UTF8.self))
                }
            }
        }
        text += "\n" + decoded.joined(separator: "\n")
        return text
    }

    /// The first lines of `dump` holding `secret` (what the failure shows), cut short.
    func lines(of dump: String, holding secret: String) -> [String] {
        dump.split(separator: "\n").filter { $0.contains(secret) }.prefix(4).map { String($0.prefix(160)) }
    }

    func secrets() -> [String] { [user, alias, token, token.uppercased(), "divorce", "\(user)-debit-1"] }

    @Test func anErasedPersonIsNowhereInTheDatabaseTheirMoneyStaysAndReplayKeepsIt() throws {
        try recordErin()
        let before = try dump()
        for secret in secrets().prefix(3) { #expect(before.contains(secret), "the dump should hold \(secret) before") }
        let money = try revenue()
        #expect(money[0] != "0", "\(money)")

        let erased = try erase(user)
        #expect(erased.status == 200 && erased.json == ["erased": true], "\(erased.text)")

        // Nothing of them, in any form, anywhere in the database.
        let after = try dump()
        for secret in secrets() {
            #expect(!after.contains(secret), "the dump still holds \(secret): \(lines(of: after, holding: secret))")
        }
        // The money stays, under an opaque id.
        #expect(try revenue() == money)
        // They read as never seen: the document of an id never used, their history empty, the
        // alias and the token lead nowhere, at every asOf.
        let never = try api.user("never-used-0")
        for id in [user, alias] {
            var document = try api.user(id)
            #expect(document["userId"]?.stringValue == id)
            document = document.removing("userId")
            #expect(document == never.removing("userId"), "\(document)")
            #expect(try api.user(id, asOf: service.clock.now - 1000).removing("userId") == never.removing("userId"))
            #expect(try api.events(id).isEmpty)
        }
        #expect(try api.get("/v1/lookup?appAccountToken=" + token).status == 404)
        #expect(try api.get("/v1/changes?userId=\(user)").json["changes"]?.arrayValue?.isEmpty == true)
        // Frank's document names them no more.
        let frank = try api.user("frank-3b")
        #expect(!String(decoding: frank.serialized(), as: UTF8.self).contains(user), "\(frank)")
        // Again: the same answer, nothing changes.
        #expect(try erase(user).json == ["erased": true])

        // Replay: nothing to change, and afterwards still nowhere.
        let dry = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(
            dry.json["changedUserCount"]?.int64Value == 0 && dry.json["changedChainOwnerCount"]?.int64Value ?? 0 == 0,
            "\(dry.text)")
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200 && replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")
        let replayed = try dump()
        for secret in secrets() {
            #expect(
                !replayed.contains(secret),
                "after replay the dump holds \(secret): \(lines(of: replayed, holding: secret))")
        }
        #expect(try api.user(user).removing("userId") == never.removing("userId"))
        #expect(try revenue() == money)
        // The id can start afresh, as a new person: nothing of the old one comes back.
        let now = service.clock.now
        let coins = Mint.signed(
            Mint.transaction(
                "5400102", product: TestService.coins, type: "Consumable", purchase: now, expires: nil, signed: now))
        #expect(try api.purchase(user, coins).json["customer"]?["balances"]?["coins"]?.int64Value == 100)
        let types = try api.events(user).compactMap { $0["type"]?.stringValue }
        #expect(types.sorted() == ["ChainClaimed", "TransactionRecorded"], "\(types)")
    }

    @Test func onlyAnAdminMayEraseAndAnIdNeverSeenIsErasedAlready() throws {
        #expect(try erase("nobody-ever", client: service.client("write")).status == 403)
        #expect(try erase("nobody-ever", client: service.client(nil)).status == 401)
        let answer = try erase("nobody-ever")
        #expect(answer.status == 200 && answer.json == ["erased": true], "\(answer.text)")
    }

    @Test func aPersonFromBeforeSubjectsIsRefusedAndNothingChanges() throws {
        let now = service.clock.now
        let coins = Mint.signed(
            Mint.transaction(
                "5400401", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                signed: now - day))
        #expect(try api.purchase("legacy-2", coins).status == 200)
        // As migration 0047 left a user of an older database: named by their id, no key.
        try service.rewriteAsLegacy("legacy-2")
        let refused = try erase("legacy-2")
        #expect(
            refused.status == 409 && refused.json["code"]?.stringValue == "erasure_needs_log_migration",
            "\(refused.text)")
        #expect(try api.user("legacy-2")["balances"]?["coins"]?.int64Value == 100)
    }
}

extension JSONValue {
    /// The object without `key`.
    fileprivate func removing(_ key: String) -> JSONValue {
        guard case .object(var fields) = self else { return self }
        fields[key] = nil
        return .object(fields)
    }
}
