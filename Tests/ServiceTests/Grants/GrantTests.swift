import EventStore
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Promotional grants (api.md §6) through HTTP and real PostgreSQL: the entitlement they give,
/// how they meet purchases, revoke, expiry by time, `asOf`, replay, the change feed, analytics,
/// idempotency, bad input and scopes.
@Suite(.tags(.database)) final class GrantTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000, hour: Int64 = 3_600_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func grant(
        _ userId: String, _ body: [String: JSONValue], headers: [String: String] = [:],
        client: ServiceHTTPClient? = nil
    ) throws -> HTTPTestConnection.Response {
        try (client ?? api).post("/v1/users/\(userId)/grants", .object(body), headers: headers)
    }

    func revoke(_ userId: String, _ grantId: String, client: ServiceHTTPClient? = nil) throws
        -> HTTPTestConnection.Response
    {
        try (client ?? api).request("DELETE", "/v1/users/\(userId)/grants/\(grantId)")
    }

    func userEventTypes(_ userId: String) throws -> [String] {
        try api.events(userId).compactMap { $0["type"]?.stringValue }
    }

    @Test func aGrantGivesThePromotionalEntitlementUntilItsEnd() throws {
        let now = service.clock.now
        let response = try grant("u-g1", ["entitlement": "pro", "duration": "P7D", "reason": "sorry about the outage"])
        #expect(response.status == 201, "\(response.text)")
        let grantId = try #require(response.json["grantId"]?.stringValue)
        #expect(GrantRequest.isGrantId(grantId))
        #expect(response.json["entitlement"]?.stringValue == "pro")
        let expiresAt = try #require(response.json["expiresAt"]?.stringValue.flatMap(RFC3339.parse))
        #expect(expiresAt >= now + 7 * day && expiresAt < now + 7 * day + 60_000)
        // The answer's customer is the document GET answers.
        let customer = response.json["customer"]
        #expect(customer == (try api.user("u-g1")))
        let pro = customer?["entitlements"]?["pro"]
        #expect(pro?["active"]?.boolValue == true)
        #expect(pro?["source"]?.stringValue == "promotional")
        #expect(pro?["expiresAt"]?.stringValue == RFC3339.format(expiresAt))
        #expect(pro?["grantId"]?.stringValue == grantId)
        #expect(pro?["productId"]?.isNull == true)
        // Recorded as an event, visible in the timeline.
        let events = try api.events("u-g1")
        #expect(events.compactMap { $0["type"]?.stringValue } == ["PromotionalGranted"])
        #expect(events.first?["data"]?["grantId"]?.stringValue == grantId)
        #expect(events.first?["data"]?["duration"]?.stringValue == "P7D")
        #expect(events.first?["data"]?["reason"]?.stringValue == "sorry about the outage")
        // Who did it: the admin key's name is in the event's metadata.
        let connection = try Connection(service.conninfo)
        let metadata = try connection.query(
            """
            SELECT metadata->>'apiKey', metadata->>'source' FROM es.events
            WHERE stream_id = (SELECT 'user:' || subject FROM identity.subjects WHERE user_id = $1)
            """, ["u-g1"])
        #expect(metadata.count == 1)
        #expect(metadata[0, 0] == "test-all")
        #expect(metadata[0, 1] == "grant")
        // The feed says so, with the details.
        let changes = try ChangeFeedTests.feed(api, userId: "u-g1", settled: service.conninfo)
        #expect(ChangeFeedTests.types(changes) == ["PROMOTIONAL_GRANT"])
        #expect(changes.first?["environment"]?.isNull == true)
        #expect(changes.first?["entitlementIds"] == .array(["pro"]))
        #expect(changes.first?["details"]?["grantId"]?.stringValue == grantId)
        #expect(changes.first?["customer"]?["entitlements"]?["pro"]?["source"]?.stringValue == "promotional")
    }

    @Test func theGrantOrPurchaseReachingFurthestDecides() throws {
        let now = service.clock.now
        let periodEnd = now + 30 * day
        let bought = Mint.transaction(
            "3100101", product: TestService.monthly, purchase: now - hour, expires: periodEnd, signed: now - hour)
        #expect(try api.purchase("u-g2", Mint.signed(bought)).status == 200)
        // A week's grant reaches less far than the paid month: the subscription still decides.
        let short = try grant("u-g2", ["entitlement": "pro", "duration": "P7D"])
        #expect(short.status == 201)
        var pro = short.json["customer"]?["entitlements"]?["pro"]
        #expect(pro?["source"]?.stringValue == "subscription")
        #expect(pro?["expiresAt"]?.stringValue == RFC3339.format(periodEnd))
        #expect(pro?["originalTransactionId"]?.stringValue == "3100101")
        // Two months reach further: the grant decides, the subscription is still listed.
        let until = now + 60 * day
        let long = try grant("u-g2", ["entitlement": "pro", "until": .string(RFC3339.format(until))])
        #expect(long.status == 201)
        pro = long.json["customer"]?["entitlements"]?["pro"]
        #expect(pro?["source"]?.stringValue == "promotional")
        #expect(pro?["expiresAt"]?.stringValue == RFC3339.format(until))
        #expect(pro?["grantId"] == long.json["grantId"])
        #expect(long.json["customer"]?["subscriptions"]?[0]?["status"]?.stringValue == "active")
        // Revoking the long one hands the entitlement back to the purchase.
        let revoked = try revoke("u-g2", try #require(long.json["grantId"]?.stringValue))
        #expect(revoked.status == 200)
        pro = revoked.json["customer"]?["entitlements"]?["pro"]
        #expect(pro?["source"]?.stringValue == "subscription")
        #expect(pro?["active"]?.boolValue == true)
    }

    @Test func revokeEndsItOnceAndAgainChangesNothing() throws {
        let made = try grant("u-g3", ["entitlement": "vip", "duration": "P1M", "reason": "beta tester"])
        let grantId = try #require(made.json["grantId"]?.stringValue)
        let first = try revoke("u-g3", grantId)
        #expect(first.status == 200, "\(first.text)")
        let vip = first.json["customer"]?["entitlements"]?["vip"]
        #expect(vip?["active"]?.boolValue == false)
        #expect(vip?["source"]?.stringValue == "promotional")
        #expect(first.json["customer"] == (try api.user("u-g3")))
        #expect(try userEventTypes("u-g3") == ["PromotionalGranted", "PromotionalRevoked"])
        let version = try api.user("u-g3")["version"]

        let again = try revoke("u-g3", grantId)
        #expect(again.status == 200)
        #expect(again.json["customer"] == first.json["customer"])
        #expect(try userEventTypes("u-g3") == ["PromotionalGranted", "PromotionalRevoked"], "nothing appended")
        #expect(try api.user("u-g3")["version"] == version)

        let unknown = try revoke("u-g3", "grt_" + String(repeating: "a", count: 32))
        #expect(unknown.status == 404)
        #expect(unknown.json["code"]?.stringValue == "not_found")
        // Another user's grant is unknown here too.
        #expect(try revoke("u-other", grantId).status == 404)
        let malformed = try revoke("u-g3", "nope")
        #expect(malformed.status == 400)
        #expect(malformed.json["detail"]?.stringValue?.contains("grantId") == true)

        let changes = try ChangeFeedTests.feed(api, userId: "u-g3", settled: service.conninfo)
        #expect(ChangeFeedTests.types(changes) == ["PROMOTIONAL_GRANT", "PROMOTIONAL_REVOKE"])
        #expect(changes.last?["details"]?["grantId"]?.stringValue == grantId)
        #expect(changes.last?["entitlementIds"] == .array(["vip"]))
    }

    @Test func aGrantRunsOutByTimeAndTheFeedSaysExpiration() throws {
        let made = try grant("u-g4", ["entitlement": "pro", "duration": "PT1H"])
        #expect(made.status == 201)
        let expiresAt = try #require(made.json["expiresAt"]?.stringValue)
        service.clock.advance(by: 2 * hour)
        let changes = try ChangeFeedTests.feed(api, userId: "u-g4", within: 20) {
            ChangeFeedTests.types($0).count >= 2
        }
        #expect(ChangeFeedTests.types(changes) == ["PROMOTIONAL_GRANT", "EXPIRATION"])
        #expect(changes.last?["occurredAt"]?.stringValue == expiresAt)
        #expect(changes.last?["entitlementIds"] == .array(["pro"]))
        #expect(changes.last?["customer"]?["entitlements"]?["pro"]?["active"]?.boolValue == false)
        let pro = try api.user("u-g4")["entitlements"]?["pro"]
        #expect(pro?["active"]?.boolValue == false)
        #expect(pro?["source"]?.stringValue == "promotional")
        #expect(pro?["expiresAt"]?.stringValue == expiresAt)
        // Revoking a grant that ran out changes nothing and records nothing.
        #expect(try revoke("u-g4", try #require(made.json["grantId"]?.stringValue)).status == 200)
        #expect(try userEventTypes("u-g4") == ["PromotionalGranted"])
    }

    @Test func asOfBeforeTheGrantShowsNoEntitlementAndReplayAgrees() throws {
        // Each instant is one the wall clock has left behind, so the three are distinct.
        let before = TestVectors.nowMillis - 1
        let made = try grant("u-g5", ["entitlement": "pro", "duration": "P7D"])
        #expect(made.status == 201)
        let granted = TestVectors.nowMillis
        try eventually("the clock to pass the grant", within: 5, every: 0.001) { TestVectors.nowMillis > granted }
        let between = TestVectors.nowMillis
        try eventually("the clock to pass \(between)", within: 5, every: 0.001) { TestVectors.nowMillis > between }
        #expect(try revoke("u-g5", try #require(made.json["grantId"]?.stringValue)).status == 200)

        #expect(try api.user("u-g5", asOf: before)["entitlements"] == .object([:]))
        #expect(try api.user("u-g5", asOf: between)["entitlements"]?["pro"]?["active"]?.boolValue == true)
        #expect(try api.user("u-g5")["entitlements"]?["pro"]?["active"]?.boolValue == false)

        // A replay from the log gives the same documents: a dry run changes no user.
        let replay = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUsers"]?.arrayValue?.isEmpty == true, "\(replay.text)")
    }

    @Test func analyticsShowsTheGrantsEntitlement() throws {
        let made = try grant("u-g6", ["entitlement": "pro", "duration": "P7D"])
        let grantId = try #require(made.json["grantId"]?.stringValue)
        let connection = try Connection(service.conninfo)
        try connection.executeScript("SET ROLE iap_analyst")
        let rows = try connection.query(
            "SELECT source, grant_id, active::text FROM analytics.entitlements WHERE user_id = $1 AND entitlement = 'pro'",
            ["u-g6"])
        #expect(rows.count == 1)
        #expect(rows[0, 0] == "promotional")
        #expect(rows[0, 1] == grantId)
        #expect(rows[0, 2] == "true")
    }

    @Test func theSameKeyAndBodyAnswerTheFirstGrantAndAnotherBodyIsRefused() throws {
        let body: [String: JSONValue] = ["entitlement": "pro", "duration": "P7D", "reason": "ticket 42"]
        let first = try grant("u-g7", body, headers: ["Idempotency-Key": "ticket-42"])
        #expect(first.status == 201)
        let grantId = try #require(first.json["grantId"]?.stringValue)
        #expect(grantId == GrantRequest.grantId(userId: "u-g7", idempotencyKey: "ticket-42"))
        service.clock.advance(by: 60_000)  // a retry a minute later: the same grant, not a later end
        let retry = try grant("u-g7", body, headers: ["Idempotency-Key": "ticket-42"])
        #expect(retry.status == 200)
        #expect(retry.json["grantId"]?.stringValue == grantId)
        #expect(retry.json["expiresAt"] == first.json["expiresAt"])
        #expect(retry.json["result"]?.stringValue == "duplicate")
        // The key as a body field is the same key.
        var inBody = body
        inBody["idempotencyKey"] = "ticket-42"
        let field = try grant("u-g7", inBody)
        #expect(field.status == 200)
        #expect(field.json["grantId"]?.stringValue == grantId)
        // The same key for another request: refused, nothing changes.
        var other = body
        other["duration"] = "P8D"
        let reused = try grant("u-g7", other, headers: ["Idempotency-Key": "ticket-42"])
        #expect(reused.status == 422)
        #expect(reused.json["code"]?.stringValue == "idempotency_key_reused")
        #expect(reused.json["grantId"]?.stringValue == grantId)
        var otherReason = body
        otherReason["reason"] = "ticket 43"
        #expect(try grant("u-g7", otherReason, headers: ["Idempotency-Key": "ticket-42"]).status == 422)
        #expect(try userEventTypes("u-g7") == ["PromotionalGranted"])
        // Another user's same key is their own grant.
        let elsewhere = try grant("u-g7b", body, headers: ["Idempotency-Key": "ticket-42"])
        #expect(elsewhere.status == 201)
        #expect(elsewhere.json["grantId"]?.stringValue != grantId)
        // Without a key, each POST is a new grant.
        let a = try grant("u-g7c", body)
        let b = try grant("u-g7c", body)
        #expect(a.status == 201 && b.status == 201)
        #expect(a.json["grantId"] != b.json["grantId"])
        #expect(try userEventTypes("u-g7c") == ["PromotionalGranted", "PromotionalGranted"])
    }

    @Test func racingRetriesOfOneKeyMakeOneGrant() throws {
        let port = service.app.port
        let key = try #require(service.keys["admin"])
        let answers = Mutex<[(Int, String?)]>([])
        onThreads(8) { _ in
            let client = ServiceHTTPClient(port: port, apiKey: key)
            let response = try? client.post(
                "/v1/users/u-race/grants", .object(["entitlement": "pro", "duration": "P7D"]),
                headers: ["Idempotency-Key": "race-1"])
            answers.withLock { $0.append((response?.status ?? 0, response?.json["grantId"]?.stringValue)) }
        }
        let all = answers.withLock { $0 }
        #expect(all.map(\.0).sorted() == [200, 200, 200, 200, 200, 200, 200, 201], "\(all)")
        #expect(Set(all.map(\.1)) == [GrantRequest.grantId(userId: "u-race", idempotencyKey: "race-1")])
        #expect(try userEventTypes("u-race") == ["PromotionalGranted"])
    }

    @Test func badInputIsRefusedNamingTheField() throws {
        let future = RFC3339.format(service.clock.now + day)
        let past = RFC3339.format(service.clock.now - 1000)
        let cases: [(body: String, headers: [String: String], field: String)] = [
            (#"{"entitlement": "pro", "duration": "P7D", "extra": 1}"#, [:], "extra"),
            (#"{"entitlement": "pro", "duration": "P7D", "until": "\#(future)"}"#, [:], "duration and until"),
            (#"{"entitlement": "pro"}"#, [:], "duration or until"),
            (#"{"entitlement": "pro", "until": "\#(past)"}"#, [:], "until"),
            (#"{"entitlement": "pro", "until": "tomorrow"}"#, [:], "until"),
            (#"{"entitlement": "pro", "duration": "7 days"}"#, [:], "duration"),
            (#"{"entitlement": "pro", "duration": "P0D"}"#, [:], "duration"),
            (#"{"entitlement": "pro", "duration": "PT"}"#, [:], "duration"),
            (#"{"entitlement": "pro", "duration": 7}"#, [:], "duration"),
            (#"{"entitlement": "", "duration": "P7D"}"#, [:], "entitlement"),
            (#"{"entitlement": "\#(String(repeating: "e", count: 129))", "duration": "P7D"}"#, [:], "entitlement"),
            (#"{"entitlement": "pro\u0007", "duration": "P7D"}"#, [:], "entitlement"),
            (#"{"duration": "P7D"}"#, [:], "entitlement"),
            (#"{"entitlement": "pro", "duration": "P7D", "reason": ""}"#, [:], "reason"),
            (
                #"{"entitlement": "pro", "duration": "P7D", "reason": "\#(String(repeating: "r", count: 501))"}"#, [:],
                "reason"
            ),
            (#"{"entitlement": "pro", "duration": "P7D", "reason": "a\nb"}"#, [:], "reason"),
            (#"{"entitlement": "pro", "duration": "P7D", "idempotencyKey": ""}"#, [:], "idempotencyKey"),
            (
                #"{"entitlement": "pro", "duration": "P7D"}"#, ["Idempotency-Key": String(repeating: "k", count: 201)],
                "Idempotency-Key"
            ),
            (
                #"{"entitlement": "pro", "duration": "P7D", "idempotencyKey": "a"}"#, ["Idempotency-Key": "b"],
                "idempotencyKey"
            ),
            (#"["pro"]"#, [:], "body"),
            (#"{not json"#, [:], "body"),
        ]
        for (body, headers, field) in cases {
            let response = try api.request("POST", "/v1/users/u-bad/grants", headers: headers, body: Array(body.utf8))
            #expect(response.status == 400, "\(body): \(response.status) \(response.text)")
            #expect(response.json["code"]?.stringValue == "invalid_request", "\(body)")
            #expect(response.json["detail"]?.stringValue?.contains(field) == true, "\(body): \(response.text)")
        }
        let longUser = String(repeating: "u", count: 257)
        let user = try api.request(
            "POST", "/v1/users/\(longUser)/grants", body: Array(#"{"entitlement":"pro","duration":"P7D"}"#.utf8))
        #expect(user.status == 400)
        #expect(user.json["detail"]?.stringValue?.contains("userId") == true)
        #expect(try api.events("u-bad").isEmpty, "nothing refused reached the log")
    }

    @Test func onlyAdminKeysMayGrantOrRevoke() throws {
        let body: [String: JSONValue] = ["entitlement": "pro", "duration": "P7D"]
        for scope in ["read", "write"] {
            let client = service.client(scope)
            let post = try grant("u-g9", body, client: client)
            #expect(post.status == 403, "\(scope)")
            #expect(post.json["code"]?.stringValue == "forbidden")
            #expect(try revoke("u-g9", "grt_" + String(repeating: "0", count: 32), client: client).status == 403)
        }
        let anonymous = service.client(nil)
        #expect(try grant("u-g9", body, client: anonymous).status == 401)
        #expect(try revoke("u-g9", "grt_" + String(repeating: "0", count: 32), client: anonymous).status == 401)
        #expect(try grant("u-g9", body, client: service.client("admin")).status == 201)
        #expect(try userEventTypes("u-g9") == ["PromotionalGranted"])
    }
}
