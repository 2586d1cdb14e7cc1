import AppStore
import EventStore
import Foundation
import HTTP
import JSON
import Ledger
import TestSupport
import Testing

@testable import Changes
@testable import Infrastructure
@testable import Service

/// The change feed names users by subject and seals what it says of them (docs/architecture.md,
/// "Erasure on an append-only log", step 3): `changes.feed` holds no user id and no personal
/// words, while the pull feed and webhooks serve exactly the JSON they served before; a change
/// of a person whose identity row is gone is served to nobody, and readers move past it.
@Suite(.tags(.database)) final class ChangeFeedSealingTests {
    var cleanups: [() -> Void] = []
    let day: Int64 = 86_400_000
    let reason = "a gift for eve@example.com"

    deinit { for cleanup in cleanups.reversed() { cleanup() } }

    func service(webhook receiver: WebhookReceiver?, sharing other: TestService? = nil) throws -> TestService {
        var configuration = TestService.configuration()
        if let receiver {
            configuration.webhooks = [
                WebhookEndpoint(
                    name: "backend", url: receiver.url(), secret: WebhookTests.secret, environments: nil, types: nil,
                    timeoutSeconds: 5, retrySchedule: [600])
            ]
        }
        let service = try TestService(configuration: configuration, sharing: other)
        cleanups.append { service.stop() }
        if receiver != nil {
            let connection = try Connection(service.conninfo)
            try eventually("the backend's delivery cursor", within: 60) {
                (try? connection.query(WebhookDeliveriesTable.cursor(endpoint: "backend")).isEmpty) == false
            }
        }
        return service
    }

    func receiver() throws -> WebhookReceiver {
        let receiver = try WebhookReceiver()
        cleanups.append { receiver.stop() }
        return receiver
    }

    @Test func theFeedNamesNobodyAndServesWhatItServedBefore() throws {
        let receiver = try receiver()
        let service = try service(webhook: receiver)
        let api = service.client()
        let now = service.clock.now
        let users = ["dora-5c1e", "finn-8d2b", "gwen-4a7c", "sami-91e0", "saul-27f4"]
        // A purchase and a debit with personal words.
        #expect(
            try api.purchase("dora-5c1e", signed("6400101", product: TestService.coins, type: "Consumable", now: now))
                .status == 200)
        let debit = try api.debit("dora-5c1e", "coins", amount: 30, key: "dora-k-1", reason: reason)
        #expect(debit.status == 200, "\(debit.text)")
        // A transfer: the same purchase posted by another user moves it.
        let moved = signed("6400201", product: TestService.coins, type: "Consumable", now: now)
        #expect(try api.purchase("finn-8d2b", moved).status == 200)
        #expect(try api.purchase("gwen-4a7c", moved).status == 200)
        // An Apple Account two users bought with.
        let account: [String: JSONValue] = ["appTransactionId": "704289572399777"]
        #expect(
            try api.purchase(
                "sami-91e0",
                signed("6400301", product: TestService.removeAds, type: "Non-Consumable", account, now: now)
            ).status == 200)
        let shared = try api.purchase(
            "saul-27f4", signed("6400302", product: TestService.removeAds, type: "Non-Consumable", account, now: now))
        #expect(shared.json["customer"]?["sameAppleAccountAs"] == .array(["sami-91e0"]), "\(shared.text)")

        // Stored: subjects and sealed parts only.
        let connection = try Connection(service.conninfo)
        let stored = try storedText(service)
        for secret in users + ["eve@example.com", "gift"] {
            #expect(!stored.contains(secret), "changes.feed or webhooks.deliveries holds \(secret)")
        }
        let shapes = try connection.query(
            """
            SELECT count(*) FILTER (WHERE user_id LIKE 's\\_%' AND details LIKE '{"sealed":"%' AND customer LIKE '{"sealed":"%'),
                count(*) FROM changes.feed
            """)
        #expect(shapes[0, 0] == shapes[0, 1] && shapes[0, 1] != "0")

        // Inside the sealed parts too, other users are named by subject: erasing one of them
        // makes the reference opaque even while the owner's key lives.
        func opened(_ user: String, _ type: String, _ column: String) throws -> [String] {
            let rows = try connection.query(
                "SELECT s.subject, encode(s.key, 'hex'), f.\(column) FROM changes.feed f JOIN identity.subjects s ON s.subject = f.user_id WHERE s.user_id = $1 AND f.type = $2",
                [user, type])
            return try (0..<rows.count).map { row in
                let sealed = try #require(ChangeSealing.sealedText(rows[row, 2] ?? ""))
                let bytes = try Sealing.openText(
                    sealed, key: try #require(Hex.decode(rows[row, 1] ?? "")),
                    associatedData: ChangeSealing.associatedData(column: column, subject: rows[row, 0] ?? ""))
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        func subject(_ user: String) throws -> String {
            try #require(try connection.query("SELECT subject FROM identity.subjects WHERE user_id = $1", [user])[0, 0])
        }
        let sharedDocuments = try opened("saul-27f4", "NON_CONSUMABLE_PURCHASE", "customer")
        #expect(!sharedDocuments.isEmpty)
        for document in sharedDocuments {
            #expect(document.contains(#""sameAppleAccountAs":[""# + (try subject("sami-91e0")) + #""]"#), "\(document)")
            #expect(document.contains(#""userId":"saul-27f4""#) && !document.contains("sami-91e0"))
        }
        let sealedTransfers = try opened("gwen-4a7c", "TRANSFER", "details")
        #expect(
            sealedTransfers == [
                #"{"from":""# + (try subject("finn-8d2b")) + #"","to":""# + (try subject("gwen-4a7c")) + #""}"#
            ])

        // Served: ids, the words, the documents as stored.
        try settle(service)
        let (changes, texts, _) = try pull(api)
        let byUser = Dictionary(grouping: changes) { $0["userId"]?.stringValue ?? "" }
        #expect(Set(byUser.keys) == Set(users))
        let debited = try #require(byUser["dora-5c1e"]?.first { $0["type"]?.stringValue == "BALANCE_DEBIT" })
        #expect(debited["details"]?["reason"]?.stringValue == reason)
        #expect(debited["details"]?["amount"]?.int64Value == 30)
        #expect(debited["details"]?["balance"]?.int64Value == 70)  // 100 − 30
        #expect(debited["customer"]?["userId"]?.stringValue == "dora-5c1e")
        let transfers = changes.filter { $0["type"]?.stringValue == "TRANSFER" }
        #expect(!transfers.isEmpty)
        for transfer in transfers {
            #expect(transfer["details"] == .object(["from": "finn-8d2b", "to": "gwen-4a7c"]), "\(transfer)")
            #expect(transfer["originalTransactionId"]?.stringValue == "6400201")
        }
        let saul = try #require(byUser["saul-27f4"]?.last)
        #expect(saul["customer"]?["sameAppleAccountAs"] == .array(["sami-91e0"]))
        // The last change of each writer carries the document the write stored, byte for byte.
        let page = texts.joined()
        for user in ["dora-5c1e", "gwen-4a7c", "saul-27f4"] {
            let document = String(decoding: try api.userBytes(user), as: UTF8.self)
            #expect(page.contains("\"customer\":" + document + "}"), "\(user)'s document as stored")
        }

        // The filter by user maps the id to the subject.
        let gwen = try pull(api, userId: "gwen-4a7c").changes
        #expect(gwen == byUser["gwen-4a7c"] ?? [])

        // Webhooks deliver the same bodies; deliveries name subjects, the admin listing ids.
        let ids = changes.compactMap { $0["id"]?.stringValue }
        try eventually("every change delivered", within: 60) { Set(receiver.requests.map(\.id)).isSuperset(of: ids) }
        for change in changes {
            let id = change["id"]?.stringValue ?? ""
            let body = try #require(receiver.requests(id: id).first).body
            #expect(page.contains(String(decoding: body, as: UTF8.self)), "webhook body of \(id)")
            #expect(try JSONValue.parse(body) == change)
        }
        let listed = try service.client("admin").get("/v1/admin/webhooks/backend/deliveries?limit=1000")
        let listedUsers = Set((listed.json["deliveries"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue })
        #expect(listedUsers == Set(users), "\(listed.text)")
        for secret in users { #expect(!(try storedText(service)).contains(secret)) }
    }

    @Test func anErasedPersonsChangesAreServedToNobodyAndReadersMovePastThem() throws {
        let writer = try service(webhook: nil)
        let api = writer.client()
        let now = writer.clock.now
        let connection = try Connection(writer.conninfo)
        #expect(
            try api.purchase("ivan-3e1f", signed("6400401", product: TestService.coins, type: "Consumable", now: now))
                .status == 200)
        try settle(writer)
        let ivanEnd = try #require(try pull(api).next)
        #expect(
            try api.purchase("hana-77b0", signed("6400402", product: TestService.coins, type: "Consumable", now: now))
                .status == 200)
        #expect(try api.debit("hana-77b0", "coins", amount: 1, key: "hana-k", reason: "hana's words").status == 200)
        let hanaRows = try connection.query(
            "SELECT f.seq, f.tx::text FROM changes.feed f JOIN identity.subjects s ON s.subject = f.user_id WHERE s.user_id = 'hana-77b0' ORDER BY f.tx, f.seq"
        )
        #expect(hanaRows.count == 2)
        let hanaEnd = "\(hanaRows[1, 1]!)-\(hanaRows[1, 0]!)"
        try settle(writer)
        #expect(try pull(api, after: ivanEnd, limit: 2).changes.count == 2)
        #expect(try pull(api, userId: "hana-77b0").changes.count == 2)

        // The erasure of a later step, simulated: the identity row goes.
        _ = try connection.execute("DELETE FROM identity.subjects WHERE user_id = 'hana-77b0'")
        #expect(
            try api.purchase("jack-0c4d", signed("6400403", product: TestService.coins, type: "Consumable", now: now))
                .status == 200)
        try settle(writer)
        let all = try pull(api)
        #expect(all.changes.compactMap { $0["userId"]?.stringValue } == ["ivan-3e1f", "jack-0c4d"])
        // A page of her rows alone is empty, and its next is past them (a reader never loops).
        let past = try api.get("/v1/changes?after=\(ivanEnd)&limit=2")
        #expect(past.json["changes"] == .array([]), "\(past.text)")
        #expect(past.json["next"]?.stringValue == hanaEnd, "\(past.text)")
        let rest = try pull(api, after: hanaEnd)
        #expect(rest.changes.compactMap { $0["userId"]?.stringValue } == ["jack-0c4d"])
        // One change a page: every page moves on, to the feed's end.
        let paged = try pull(api, limit: 1)
        #expect(paged.changes == all.changes)
        #expect(paged.next == all.next && paged.texts.count == 5)  // 4 rows, then the empty end
        #expect(try pull(api, userId: "hana-77b0").changes.isEmpty)
        // A long poll on her rows answers at once with the moved cursor.
        let poll = try api.get("/v1/changes?after=\(ivanEnd)&limit=2&wait=20")
        #expect(poll.json["next"]?.stringValue == hanaEnd)

        // Webhooks: an endpoint following the feed from its start delivers only the others' and
        // its cursor passes hers.
        _ = try connection.execute(
            "INSERT INTO webhooks.cursors (endpoint, tx, seq, started_at) VALUES ('backend', '0', 0, 0)")
        let receiver = try receiver()
        let follower = try service(webhook: receiver, sharing: writer)
        let served = all.changes.compactMap { $0["id"]?.stringValue }
        try eventually("what was served, delivered", within: 60) { Set(receiver.requests.map(\.id)) == Set(served) }
        let hanaIds = (0..<hanaRows.count).map { StoredChange.id(seq: Int64(hanaRows[$0, 0]!)!) }
        #expect(receiver.requests.allSatisfy { !hanaIds.contains($0.id) })
        let cursor = try connection.query(
            "SELECT tx::text || '-' || seq FROM webhooks.cursors WHERE endpoint = 'backend'")
        #expect(cursor[0, 0] == all.next)
        let deliveries = try follower.client("admin").get("/v1/admin/webhooks/backend/deliveries?limit=100")
        #expect(deliveries.json["deliveries"]?.arrayValue?.count == served.count, "\(deliveries.text)")
    }

    @Test func aQueuedDeliveryOfAnErasedPersonEndsUnsentAndHoldsNothingUp() throws {
        let receiver = try receiver()
        receiver.setAnswer { _, _ in HTTPResponse(status: 503) }
        let service = try service(webhook: receiver)
        let api = service.client()
        let admin = service.client("admin")
        let now = service.clock.now
        #expect(
            try api.purchase("lena-5d2a", signed("6400501", product: TestService.coins, type: "Consumable", now: now))
                .status == 200)
        try settle(service)
        let id = try #require(try pull(api).changes.first?["id"]?.stringValue)
        func status() throws -> String? {
            try admin.get("/v1/admin/webhooks/backend/deliveries?limit=100").json["deliveries"]?.arrayValue?
                .first { $0["id"]?.stringValue == id }?["status"]?.stringValue
        }
        try eventually("(try? status()) == \"failed\"", within: 60) { (try? status()) == "failed" }
        #expect(receiver.requests(id: id).count == 1)

        _ = try Connection(service.conninfo).execute("DELETE FROM identity.subjects WHERE user_id = 'lena-5d2a'")
        receiver.setAnswer { _, _ in HTTPResponse(status: 204) }
        let again = try admin.post("/v1/admin/webhooks/backend/redeliver", .object(["status": "failed"]))
        #expect(again.status == 200, "\(again.text)")
        try eventually("(try? status()) == \"dead\"", within: 60) { (try? status()) == "dead" }
        #expect(receiver.requests(id: id).count == 1)  // never sent again
        // Her later self (a new identity) is delivered, not held behind the dead one.
        #expect(
            try api.purchase("lena-5d2a", signed("6400502", product: TestService.coins, type: "Consumable", now: now))
                .status == 200)
        try settle(service)
        let later = try #require(try pull(api).changes.last?["id"]?.stringValue)
        #expect(later != id)
        try eventually("!receiver.requests(id: later).isEmpty", within: 60) { !receiver.requests(id: later).isEmpty }
    }

    @Test func usersWithoutAKeyAndRowsFromBeforeAreStoredAndServedInClear() throws {
        let service = try service(webhook: nil)
        let api = service.client()
        let connection = try Connection(service.conninfo)
        #expect(
            try api.purchase(
                "nora-6b3c", signed("6400601", product: TestService.coins, type: "Consumable", now: service.clock.now)
            ).status == 200)
        // A legacy user (registered by 0047: id = subject, no key) and a row of a keyed user
        // written before the feed was sealed: both in clear, as the write paths store them.
        _ = try connection.execute(
            "INSERT INTO identity.subjects (user_id, subject) VALUES ('kim-legacy', 'kim-legacy')")
        let legacy = Subjects([Subject(userId: "kim-legacy", subject: "kim-legacy", key: nil)])
        func change(_ user: String) -> NewChange {
            NewChange(
                userId: user,
                draft: ChangeDraft(type: .balanceDebit, occurredAt: 1, details: ["reason": "kept in clear"]),
                customer: #"{"userId":"\#(user)","sameAppleAccountAs":["nora-6b3c"]}"#)
        }
        let rows = try ChangeSealing.rows([change("kim-legacy"), change("nora-6b3c")], subjects: legacy)
        #expect(rows.map(\.userId) == ["kim-legacy", "nora-6b3c"])
        _ = try connection.execute(try #require(ChangeFeedTable.insert(rows, recordedAt: 2)))
        #expect(try storedText(service).contains(#"{"userId":"kim-legacy","sameAppleAccountAs":["nora-6b3c"]}"#))
        try settle(service)

        let all = try pull(api).changes
        #expect(all.compactMap { $0["userId"]?.stringValue } == ["nora-6b3c", "kim-legacy", "nora-6b3c"])
        #expect(all[1]["details"] == .object(["reason": "kept in clear"]))
        #expect(all[1]["customer"] == .object(["userId": "kim-legacy", "sameAppleAccountAs": ["nora-6b3c"]]))
        #expect(try pull(api, userId: "kim-legacy").changes == [all[1]])
        #expect(try pull(api, userId: "nora-6b3c").changes == [all[0], all[2]])

        // Without an identity row, a row in clear is not served either.
        _ = try connection.execute("DELETE FROM identity.subjects WHERE user_id = 'kim-legacy'")
        let after = try pull(api)
        #expect(after.changes == [all[0], all[2]])
        #expect(try pull(api, userId: "kim-legacy").changes.isEmpty)
    }
}
