import EventStore
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Changes
@testable import Infrastructure
@testable import Service

/// The pull feed of api.md §4 through HTTP and real PostgreSQL: what writes emit, what time
/// emits, and what the feed's parameters accept.
@Suite(.tags(.database)) final class ChangeFeedTests {
    let service: TestService
    let api: ServiceHTTPClient

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    /// Waits until every transaction that committed before this call is visible to the feed's
    /// readers: the feed is read below the cluster-wide xid horizon (eventstore.md §1), so a
    /// change shows once every transaction that took an xid before it has ended — at once in
    /// production, but another suite's open transaction on the shared test cluster holds it back.
    static func settle(_ conninfo: String) throws {
        let connection = try Connection(conninfo)
        let mine = try connection.query("SELECT pg_current_xact_id()::text")[0, 0] ?? "0"
        // Not fatal when it never passes (as before): the caller's expectations say what is missing.
        try? eventually("the xid horizon to pass \(mine)", within: 30) {
            try connection.query("SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8 AS passed", [mine])
                .bool(0, "passed") == true
        }
    }

    /// Every change of the feed (or of one user), paging through it, once what committed
    /// before is visible (`settle`).
    static func feed(_ api: ServiceHTTPClient, userId: String? = nil, settled conninfo: String) throws -> [JSONValue] {
        try settle(conninfo)
        return try feed(api, userId: userId)
    }

    /// Every change of the feed (or of one user) visible now, paging through it.
    static func feed(_ api: ServiceHTTPClient, userId: String? = nil) throws -> [JSONValue] {
        var all: [JSONValue] = []
        var after: String?
        while true {
            var query = ["limit=2"]
            if let after { query.append("after=" + after) }
            if let userId { query.append("userId=" + userId) }
            let response = try api.get("/v1/changes?" + query.joined(separator: "&"))
            guard response.status == 200 else {
                throw HTTPTestConnection.Failure(description: "GET /v1/changes \(response.status) \(response.text)")
            }
            let page = response.json["changes"]?.arrayValue ?? []
            guard let next = response.json["next"]?.stringValue else {
                throw HTTPTestConnection.Failure(description: "next is missing")
            }
            if page.isEmpty {
                #expect(next == (after ?? "0-0"), "an empty page's next is the after given")
                return all
            }
            #expect(next == page.last?["cursor"]?.stringValue)
            all += page
            after = next
        }
    }

    /// The feed (or one user's) once `done` holds, or as it stands after `seconds` (the clock's
    /// work is asynchronous; the caller's expectations say what is missing).
    static func feed(
        _ api: ServiceHTTPClient, userId: String? = nil, within seconds: Double, until done: ([JSONValue]) -> Bool
    ) throws -> [JSONValue] {
        var changes = try feed(api, userId: userId)
        try? eventually("the feed to show what the test waits for", within: seconds) {
            changes = try feed(api, userId: userId)
            return done(changes)
        }
        return changes
    }

    static func types(_ changes: [JSONValue]) -> [String] { changes.compactMap { $0["type"]?.stringValue } }

    /// Type, cursor and instants of each change: what a failure needs to tell who wrote what when.
    static func trace(_ changes: [JSONValue]) -> String {
        changes.map { change in
            ["type", "cursor", "occurredAt", "recordedAt"].map { change[$0]?.stringValue ?? "-" }.joined(separator: " ")
        }.joined(separator: "; ")
    }

    @Test func aPurchaseEmitsOneInitialPurchaseWithTheCustomerAfterItAndARepostNothing() throws {
        let now = service.clock.now
        let fields = Mint.transaction(
            "3000001", product: TestService.monthly, purchase: now - hour, expires: now + 29 * day, signed: now - hour)
        let posted = try api.purchase("u-feed", Mint.signed(fields))
        #expect(posted.status == 200)
        #expect(
            try api.purchase("u-feed", Mint.signed(fields)).json["transactions"]?[0]?["result"]?.stringValue
                == "duplicate")

        let changes = try Self.feed(api, settled: service.conninfo)
        #expect(Self.types(changes) == ["INITIAL_PURCHASE"])
        let change = try #require(changes.first)
        #expect(change["userId"]?.stringValue == "u-feed")
        #expect(change["environment"]?.stringValue == "Sandbox" || change["environment"]?.stringValue == "Production")
        #expect(change["productId"]?.stringValue == TestService.monthly)
        #expect(change["originalTransactionId"]?.stringValue == "3000001")
        #expect(change["transactionId"]?.stringValue == "3000001")
        #expect(change["entitlementIds"] == .array([.string("pro")]))
        #expect(change["details"] == .object([:]))
        let id = try #require(change["id"]?.stringValue)
        #expect(id.hasPrefix("chg_") && id.count == 19)
        #expect(change["customer"]?["entitlements"]?["pro"]?["active"]?.boolValue == true)
        #expect(change["customer"] == posted.json["customer"], "the document after the change is the one answered")
        #expect(change["occurredAt"]?.stringValue.flatMap(RFC3339.parse) != nil)
        #expect(change["recordedAt"]?.stringValue.flatMap(RFC3339.parse) != nil)
    }

    @Test func consumablePurchaseAndDebitCarryCurrencyAmountAndBalance() throws {
        let now = service.clock.now
        let coins = Mint.transaction(
            "3000101", product: TestService.coins, type: "Consumable", purchase: now - second, expires: nil,
            signed: now - second)
        #expect(try api.purchase("u-coins", Mint.signed(coins)).status == 200)
        #expect(try api.debit("u-coins", "coins", amount: 30, key: "k-1", reason: "sword").status == 200)
        #expect(
            try api.debit("u-coins", "coins", amount: 30, key: "k-1", reason: "sword").json["result"]?.stringValue
                == "duplicate")

        let changes = try Self.feed(api, userId: "u-coins", settled: service.conninfo)
        #expect(Self.types(changes) == ["CONSUMABLE_PURCHASE", "BALANCE_DEBIT"])
        #expect(changes[0]["details"]?["currency"]?.stringValue == "coins")
        #expect(changes[0]["details"]?["amount"]?.int64Value == 100)
        #expect(changes[0]["details"]?["balance"]?.int64Value == 100)
        #expect(changes[1]["details"]?["amount"]?.int64Value == 30)
        #expect(changes[1]["details"]?["balance"]?.int64Value == 70)
        #expect(changes[1]["environment"] == .null, "a debit has no store environment")
        #expect(changes[1]["customer"]?["balances"]?["coins"]?.int64Value == 70)
    }

    @Test func aTransferEmitsOneTransferForEachUserWithTheSameDetails() throws {
        let now = service.clock.now
        let fields = Mint.transaction(
            "3000201", product: TestService.removeAds, type: "Non-Consumable", purchase: now - hour, expires: nil,
            signed: now - hour)
        #expect(try api.purchase("u-old", Mint.signed(fields)).status == 200)
        #expect(try api.purchase("u-new", Mint.signed(fields)).status == 200)
        let old = try Self.feed(api, userId: "u-old", settled: service.conninfo)
        let new = try Self.feed(api, userId: "u-new")
        #expect(Self.types(old) == ["NON_CONSUMABLE_PURCHASE", "TRANSFER"])
        #expect(Self.types(new) == ["TRANSFER"])
        let details: JSONValue = .object(["from": .string("u-old"), "to": .string("u-new")])
        #expect(old.last?["details"] == details)
        #expect(new.last?["details"] == details)
        #expect(old.last?["customer"]?["entitlements"]?["no_ads"]?["active"]?.boolValue != true)
        #expect(new.last?["customer"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
    }

    @Test func anExpiryWithNoEventIsEmittedOnceAtItsInstantWithTwoInstancesRunning() throws {
        let second = try TestService(clock: service.clock, sharing: service)
        defer { second.stop() }
        let now = service.clock.now
        let expires = now + 1500
        let fields = Mint.transaction(
            "3000301", product: TestService.monthly, purchase: now - 30 * day, expires: expires, signed: now - hour)
        #expect(try api.purchase("u-lapse", Mint.signed(fields)).status == 200)
        var changes: [JSONValue] = []
        try eventually("two changes of u-lapse: \(Self.trace(changes))", within: 10) {
            changes = try Self.feed(api, userId: "u-lapse")
            return Self.types(changes).count >= 2
        }
        #expect(Self.types(changes) == ["INITIAL_PURCHASE", "EXPIRATION"], "\(Self.trace(changes))")
        let expiration = try #require(changes.last)
        #expect(expiration["occurredAt"]?.stringValue == RFC3339.format(expires))
        let recorded = try #require(expiration["recordedAt"]?.stringValue.flatMap(RFC3339.parse))
        #expect(recorded - expires < 5000, "emitted within 5 s of the instant")
        #expect(expiration["customer"]?["entitlements"]?["pro"]?["active"]?.boolValue == false)
        // The clock has looked again since (whichever instance holds it): still once.
        let marks = try [service, second].map { instance in
            let clock = try #require(instance.app.jobs.running(named: ChangeClock.leaseName))
            return (clock, clock.mark())
        }
        try eventually("a round of the change clock", within: 30) {
            marks.contains { loop, mark in loop.hasRoundEnded(since: mark) }
        }
        #expect(
            Self.types(try Self.feed(api, userId: "u-lapse", settled: service.conninfo)) == [
                "INITIAL_PURCHASE", "EXPIRATION",
            ])
    }

    @Test func aRefusedClaimEmitsNothing() throws {
        let keep = try TestService(configuration: TestService.configuration(policy: .keep))
        defer { keep.stop() }
        let api = keep.client()
        let now = keep.clock.now
        let fields = Mint.transaction(
            "3000401", product: TestService.removeAds, type: "Non-Consumable", purchase: now - hour, expires: nil,
            signed: now - hour)
        #expect(try api.purchase("u-first", Mint.signed(fields)).status == 200)
        #expect(try api.purchase("u-second", Mint.signed(fields)).status == 409)
        #expect(Self.types(try Self.feed(api, settled: keep.conninfo)) == ["NON_CONSUMABLE_PURCHASE"])
    }

    @Test func badParametersAre400() throws {
        for query in [
            "after=12", "after=abc", "after=1-x", "after=-1-2", "limit=0", "limit=1001", "wait=61", "wait=-1",
            "userId=",
        ] {
            let response = try api.get("/v1/changes?" + query)
            #expect(response.status == 400, "\(query)")
            #expect(response.json["code"]?.stringValue == "invalid_request", "\(query)")
        }
        #expect(try service.client("write").get("/v1/changes").status == 403)
        #expect(try service.client(nil).get("/v1/changes").status == 401)
    }

    @Test func aLongPollIsAnsweredByAChangeAnotherInstanceWritesAndOnlyOfItsUser() throws {
        let other = try TestService(clock: service.clock, sharing: service)
        defer { other.stop() }
        let head = try api.get("/v1/changes").json["next"]?.stringValue ?? "0-0"
        let now = service.clock.now
        let answered = Mutex<[String: (status: Int, json: JSONValue)]>([:])
        let waiters = DispatchGroup()
        for (name, query) in [
            ("all", "after=\(head)&wait=20"), ("mine", "after=\(head)&wait=20&userId=u-poll"),
            ("theirs", "after=\(head)&wait=2&userId=u-nobody"),
        ] {
            waiters.enter()
            let service = self.service
            Thread.detachNewThread {
                defer { waiters.leave() }
                if let response = try? service.client().get("/v1/changes?" + query) {
                    answered.withLock { $0[name] = (response.status, response.json) }
                }
            }
        }
        // All three registered (an early post is answered by the second read).
        try eventually("three long polls waiting", within: 10) { service.app.changeWaiters.count == 3 }
        let fields = Mint.transaction(
            "3000501", product: TestService.monthly, purchase: now - hour, expires: now + 29 * day, signed: now - hour)
        #expect(try other.client().purchase("u-poll", Mint.signed(fields)).status == 200)
        #expect(waiters.wait(timeout: .now() + 30) == .success)
        let results = answered.withLock { $0 }
        for name in ["all", "mine"] {
            let page = try #require(results[name], "\(name) answered")
            #expect(page.status == 200)
            #expect(Self.types(page.json["changes"]?.arrayValue ?? []) == ["INITIAL_PURCHASE"], "\(name)")
            #expect(page.json["next"]?.stringValue == page.json["changes"]?[0]?["cursor"]?.stringValue)
        }
        let theirs = try #require(results["theirs"])
        #expect(theirs.status == 200)
        #expect(theirs.json["changes"]?.arrayValue?.isEmpty == true, "another user's change does not answer it")
        #expect(theirs.json["next"]?.stringValue == head, "an empty page's next is the after given")
    }

    @Test func aTestNotificationFromAppleIsATestChangeForNoUserOnceAndNothingElseIsEmittedForIt() throws {
        let signed = TestVectors.shared.signedNotification(type: "TEST", subtype: nil, transaction: nil, renewal: nil)
        #expect(try api.notify(signed).json["result"]?.stringValue == "recorded")
        #expect(try api.notify(signed).json["result"]?.stringValue == "duplicate")
        let changes = try Self.feed(api, settled: service.conninfo)
        #expect(Self.types(changes) == ["TEST"])
        #expect(changes.first?["userId"] == .null)
        #expect(changes.first?["customer"] == .null)
        #expect(changes.first?["details"]?["notificationUUID"]?.stringValue?.isEmpty == false)
    }

    @Test func theClockMovesToAnotherInstanceWhenItsHolderIsGone() throws {
        let first = try TestService(clock: service.clock)
        let connection = try Connection(first.conninfo)
        // The live lease of the clock, if any: its fencing token.
        func holder() throws -> Int64? {
            let rows = try connection.query(
                "SELECT token FROM ops.leases WHERE name = $1 AND expires_at > now()", [ChangeClock.leaseName])
            return rows.isEmpty ? nil : rows.int64(0, "token")  // none yet (or expired): no row
        }
        try? eventually("the first instance's clock to take its lease", within: 10) { try holder() != nil }
        let firstToken = try #require(try holder(), "the first instance's clock holds the lease")
        let second = try TestService(clock: service.clock, sharing: first)
        defer { second.stop() }
        first.stop()  // releases its leases (a kill -9 instead: LeaseProcessTests)

        let now = service.clock.now
        let expires = now + 1500
        let fields = Mint.transaction(
            "3000601", product: TestService.monthly, purchase: now - 30 * day, expires: expires, signed: now - hour)
        #expect(try second.client().purchase("u-takeover", Mint.signed(fields)).status == 200)
        var changes: [JSONValue] = []
        try eventually("two changes of u-takeover: \(Self.trace(changes))", within: 10) {
            changes = try Self.feed(second.client(), userId: "u-takeover")
            return Self.types(changes).count >= 2
        }
        #expect(Self.types(changes) == ["INITIAL_PURCHASE", "EXPIRATION"])
        #expect(changes.last?["occurredAt"]?.stringValue == RFC3339.format(expires))
        #expect(try holder().map { $0 > firstToken } == true, "the second instance's clock took the lease")
    }
}
