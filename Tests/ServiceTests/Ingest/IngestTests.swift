import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Idempotency, claims before and after facts, transfer/keep policies and `asOf`, over HTTP.
@Suite(.tags(.database)) final class IngestTests {
    let service: TestService
    let api: ServiceHTTPClient

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func eventCount(_ user: String) throws -> Int { try api.events(user).count }

    @Test func duplicatesAnswerDuplicateAndAppendNothing() throws {
        let now = service.clock.now
        let tx = Mint.transaction(
            "2000001", product: TestService.monthly, purchase: now - day, expires: now + day, signed: now - day)
        let signed = Mint.signed(tx)
        let first = try api.purchase("u-dup", signed)
        #expect(first.json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        #expect(first.json["transactions"]?[0]?["transactionId"]?.stringValue == "2000001")
        #expect(first.json["transactions"]?[0]?["originalTransactionId"]?.stringValue == "2000001")
        #expect(first.json["transactions"]?[0]?["productId"]?.stringValue == TestService.monthly)
        #expect(first.json["userId"]?.stringValue == "u-dup")
        let count = try eventCount("u-dup")
        #expect(count == 2)  // TransactionRecorded + ChainClaimed
        let version = try api.user("u-dup")["version"]?.int64Value

        // The same transaction, even re-signed with the same content, is a duplicate.
        for again in [signed, Mint.signed(tx)] {
            let response = try api.purchase("u-dup", again)
            #expect(response.status == 200)
            #expect(response.json["transactions"]?[0]?["result"]?.stringValue == "duplicate")
            #expect(response.json["customer"]?["version"]?.int64Value == version)
        }
        #expect(try eventCount("u-dup") == count)

        let notification = Mint.notification("DID_RENEW", transaction: tx, renewal: Mint.renewal(signed: now))
        let recorded = try api.notify(notification)
        #expect(recorded.status == 200)
        #expect(recorded.json["result"]?.stringValue == "recorded")
        #expect(recorded.json["notificationUUID"]?.stringValue?.isEmpty == false)
        let afterNotification = try eventCount("u-dup")
        #expect(afterNotification == count + 2)  // NotificationReceived + RenewalInfoRecorded
        let redelivered = try api.notify(notification)
        #expect(redelivered.status == 200)
        #expect(redelivered.json["result"]?.stringValue == "duplicate")
        #expect(redelivered.json["notificationUUID"] == recorded.json["notificationUUID"])
        #expect(try eventCount("u-dup") == afterNotification)
        let versionAfter = try api.user("u-dup")["version"]?.int64Value
        #expect((versionAfter ?? 0) > (version ?? 0))
    }

    @Test func notificationBeforeAnyClaimCountsOnceAPurchaseClaimsTheChain() throws {
        let now = service.clock.now
        let first = Mint.transaction(
            "2000101", product: TestService.monthly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day)
        let second = Mint.transaction(
            "2000102", chain: "2000101", product: TestService.monthly, purchase: now - 10 * day,
            expires: now + 20 * day,
            signed: now - 10 * day)
        #expect(
            try api.notify(
                Mint.notification("DID_RENEW", transaction: second, renewal: Mint.renewal(signed: now - 10 * day))
            ).json["result"]?.stringValue == "recorded")
        #expect(try api.user("u-late")["subscriptions"]?.arrayValue?.isEmpty == true)
        #expect(try api.get("/v1/subscriptions/2000101").json["owner"]?.isNull ?? true)

        let claimed = try api.purchase("u-late", Mint.signed(first))
        #expect(claimed.status == 200)
        let sub = try #require(claimed.json["customer"]?["subscriptions"]?[0])
        #expect(sub["status"]?.stringValue == "active")
        #expect(sub["expiresAt"]?.stringValue == RFC3339.format(now + 20 * day))
        #expect(try api.user("u-late")["entitlements"]?["pro"]?["active"]?.boolValue == true)
        #expect(try eventCount("u-late") == 5)  // notification, transaction, renewal, transaction, claim
        let chain = try api.get("/v1/subscriptions/2000101")
        #expect(chain.status == 200)
        #expect(chain.json["owner"]?.stringValue == "u-late")
        #expect(chain.json["originalTransactionId"]?.stringValue == "2000101")
        #expect(chain.json["state"] != nil)
        #expect(chain.json["transactions"]?.arrayValue?.count == 2)
        #expect(chain.json["renewalInfos"]?.arrayValue?.count == 1)
    }

    @Test func appAccountTokenEqualToTheUserIdClaimsTheChain() throws {
        let now = service.clock.now
        let user = UUID().uuidString.lowercased()
        let first = Mint.transaction(
            "2000201", product: TestService.monthly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day)
        #expect(try api.notify(Mint.notification("SUBSCRIBED", "INITIAL_BUY", transaction: first)).status == 200)
        #expect(try api.user(user)["subscriptions"]?.arrayValue?.isEmpty == true)
        let second = Mint.transaction(
            "2000202", chain: "2000201", product: TestService.monthly, purchase: now - 10 * day,
            expires: now + 20 * day,
            signed: now - 10 * day, ["appAccountToken": .string(user)])
        #expect(try api.notify(Mint.notification("DID_RENEW", transaction: second)).status == 200)
        let document = try api.user(user)
        let sub = try #require(document["subscriptions"]?[0])
        #expect(sub["originalTransactionId"]?.stringValue == "2000201")
        #expect(sub["expiresAt"]?.stringValue == RFC3339.format(now + 20 * day))
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == true)
        #expect(try api.events(user).contains { $0["type"]?.stringValue == "ChainClaimed" })
    }

    @Test func transferMovesTheChainAndRecordsIt() throws {
        let now = service.clock.now
        let signed = Mint.signed(
            Mint.transaction(
                "2000301", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
                signed: now - day))
        #expect(try api.purchase("u-old", signed).status == 200)
        #expect(try api.user("u-old")["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        let moved = try api.purchase("u-new", signed)
        #expect(moved.status == 200)
        #expect(moved.json["transactions"]?[0]?["result"]?.stringValue == "duplicate")
        #expect(moved.json["customer"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        let old = try api.user("u-old")
        #expect(old["nonConsumables"]?.arrayValue?.isEmpty == true)
        #expect(old["entitlements"]?["no_ads"]?["active"]?.boolValue != true)
        #expect(try api.get("/v1/subscriptions/2000301").json["owner"]?.stringValue == "u-new")

        let claimed = try #require(try api.events("u-new").first { $0["type"]?.stringValue == "ChainClaimed" })
        #expect(claimed["data"]?.serialized().contains(Array("u-old".utf8)) == true, "\(claimed)")
        let released = try #require(try api.events("u-old").first { $0["type"]?.stringValue == "ChainReleased" })
        #expect(released["data"]?.serialized().contains(Array("u-new".utf8)) == true, "\(released)")
        #expect(old["version"]?.int64Value ?? 0 >= released["seq"]?.int64Value ?? .max)
    }

    /// A claim locks the claimant's stream before it knows the chain's owner; an owner sorting
    /// before the claimant is locked by starting over (locks are always taken in name order).
    @Test func transfersWorkWhicheverOfTheTwoUsersSortsFirst() throws {
        let now = service.clock.now
        for (index, (from, to)) in [("u-t1-aaa", "u-t1-zzz"), ("u-t2-zzz", "u-t2-aaa")].enumerated() {
            let id = "200070\(index)"
            let signed = Mint.signed(
                Mint.transaction(
                    id, product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
                    signed: now - day))
            #expect(try api.purchase(from, signed).status == 200)
            let moved = try api.purchase(to, signed)
            #expect(moved.status == 200)
            #expect(moved.json["customer"]?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
            #expect(try api.get("/v1/subscriptions/\(id)").json["owner"]?.stringValue == to)
            #expect(try api.user(from)["entitlements"]?["no_ads"]?["active"]?.boolValue != true)
            #expect(try api.events(to).filter { $0["type"]?.stringValue == "ChainClaimed" }.count == 1)
            #expect(try api.events(from).filter { $0["type"]?.stringValue == "ChainReleased" }.count == 1)
        }
    }

    @Test func keepPolicyRefusesTheSecondUser() throws {
        let keep = try TestService(configuration: TestService.configuration(policy: .keep))
        defer { keep.stop() }
        let api = keep.client()
        let now = keep.clock.now
        let signed = Mint.signed(
            Mint.transaction(
                "2000401", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
                signed: now - day))
        #expect(try api.purchase("u-first", signed).status == 200)
        let refused = try api.purchase("u-second", signed)
        #expect(refused.status == 409)
        #expect(refused.json["code"]?.stringValue == "owned_by_other_user")
        #expect(refused.headers["content-type"] == "application/problem+json")
        #expect(try api.user("u-first")["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(try api.user("u-second")["nonConsumables"]?.arrayValue?.isEmpty == true)
        #expect(try api.events("u-second").isEmpty)
        // The owner posting it again is still fine.
        #expect(try api.purchase("u-first", signed).status == 200)
    }

    @Test func asOfAnswersAsBeforeAndAfterARefund() throws {
        let now = service.clock.now
        let bought = Mint.transaction(
            "2000501", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        // Each instant is one the wall clock has left behind, so they are distinct.
        let beforePurchase = TestVectors.nowMillis - 1
        #expect(try api.purchase("u-asof", Mint.signed(bought)).status == 200)
        let purchased = TestVectors.nowMillis
        try eventually("the clock to pass the purchase", within: 5, every: 0.001) { TestVectors.nowMillis > purchased }
        let beforeRefund = TestVectors.nowMillis
        try eventually("the clock to pass \(beforeRefund)", within: 5, every: 0.001) {
            TestVectors.nowMillis > beforeRefund
        }
        var refunded = bought
        refunded["revocationDate"] = .int(now - hour)
        refunded["signedDate"] = .int(now - hour)
        #expect(try api.notify(Mint.notification("REFUND", transaction: refunded)).status == 200)

        #expect(try api.user("u-asof", asOf: beforePurchase)["nonConsumables"]?.arrayValue?.isEmpty == true)
        let then = try api.user("u-asof", asOf: beforeRefund)
        #expect(then["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(then["nonConsumables"]?[0]?["revokedAt"]?.isNull == true)
        let current = try api.user("u-asof")
        #expect(current["entitlements"]?["no_ads"]?["active"]?.boolValue == false)
        let later = try api.user("u-asof", asOf: TestVectors.nowMillis + 1000)
        #expect(later["entitlements"] == current["entitlements"])
        #expect(later["nonConsumables"] == current["nonConsumables"])
        #expect((then["version"]?.int64Value ?? .max) < (current["version"]?.int64Value ?? 0))
        let bad = try api.get("/v1/users/u-asof?asOf=yesterday")
        #expect(bad.status == 400)
        #expect(bad.json["code"]?.stringValue == "invalid_request")
    }

    @Test func aUserNeverSeenIsEmptyNotMissing() throws {
        let document = try api.user("nobody")
        #expect(document["userId"]?.stringValue == "nobody")
        #expect(document["entitlements"]?.objectValue?.isEmpty == true)
        #expect(document["subscriptions"]?.arrayValue?.isEmpty == true)
        #expect(document["nonConsumables"]?.arrayValue?.isEmpty == true)
        #expect(document["balances"]?.objectValue?.isEmpty == true)
        #expect(document["version"]?.int64Value == 0)
    }

    @Test func eventsPageOldestFirst() throws {
        let now = service.clock.now
        for index in 0..<3 {
            let id = "200060\(index)"
            #expect(
                try api.purchase(
                    "u-pages",
                    Mint.signed(
                        Mint.transaction(
                            id, product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                            signed: now - day))
                ).status == 200)
        }
        var seen: [Int64] = []
        var after: Int64 = 0
        var pages = 0
        while true {
            let page = try api.get("/v1/users/u-pages/events?after=\(after)&limit=2").json
            let events = page["events"]?.arrayValue ?? []
            #expect(events.count <= 2)
            for event in events {
                seen.append(event["seq"]?.int64Value ?? -1)
                #expect(event["type"]?.stringValue?.isEmpty == false)
                #expect(event["recordedAt"]?.stringValue.flatMap(RFC3339.parse) != nil)
                #expect(event["data"]?.objectValue != nil)
            }
            pages += 1
            guard let next = page["next"]?.int64Value else { break }
            after = next
        }
        #expect(seen.count == 6)
        #expect(seen == seen.sorted())
        #expect(Set(seen).count == 6)
        #expect(pages == 3)
    }

    @Test func whileTheDatabaseIsUnreachableWritesAnswer503AndNothingIsLost() throws {
        let now = service.clock.now
        let transaction = Mint.transaction(
            "2000701", product: TestService.monthly, purchase: now - day, expires: now + day, signed: now - day)
        let notification = Mint.notification("SUBSCRIBED", "INITIAL_BUY", transaction: transaction)
        let database = try #require(try Connection(service.conninfo).query("SELECT current_database()", [])[0, 0])
        let admin = try Connection(TestDatabase.shared.server().connectionString(database: "postgres"))
        _ = try admin.execute("ALTER DATABASE \"\(database)\" ALLOW_CONNECTIONS false", [])
        _ = try admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            [database])
        let refused = try api.notify(notification)
        _ = try admin.execute("ALTER DATABASE \"\(database)\" ALLOW_CONNECTIONS true", [])
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.json["code"]?.stringValue == "store_unavailable")
        #expect(refused.headers["retry-after"] != nil)

        // Apple redelivers: recorded once, and it counts when the chain is claimed. Through
        // PgBouncer the first requests after PostgreSQL returns may still be refused (its fast
        // fail: a pool whose last login failed turns clients away until a new login succeeds),
        // so the redelivery is retried as Apple retries, until it is answered otherwise.
        var redelivered = try api.notify(notification)
        try? eventually("the redelivery answered other than 503", within: 15, every: 0.2) {
            if redelivered.status == 503 { redelivered = try api.notify(notification) }
            return redelivered.status != 503
        }
        #expect(redelivered.status == 200, "\(redelivered.text)")
        #expect(redelivered.json["result"]?.stringValue == "recorded")
        #expect(try api.purchase("u-outage", Mint.signed(transaction)).status == 200)
        #expect(try api.user("u-outage")["entitlements"]?["pro"]?["active"]?.boolValue == true)
    }
}
