import AppStore
import Foundation
import JSON
import TestStore
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `GET /v1/lookup?orderId=` (api.md §7): Apple's Look Up Order ID, played by the stand-in
/// (which checks every token as Apple does and answers status 1 for an order it does not
/// know), recorded as `sync` records: verified, through the same path, duplicates duplicates.
@Suite(.tags(.database)) struct LookupOrderTests {
    static func coins(_ transactionId: String, _ extra: [String: JSONValue] = [:]) -> String {
        Mint.signed(
            Mint.transaction(
                transactionId, product: TestService.coins, type: "Consumable", purchase: 1_780_000_000_000,
                expires: nil,
                signed: 1_780_000_000_000, extra.merging(["environment": "Production"]) { a, _ in a }))
    }

    @Test func anOrderNobodyClaimedIsRecordedAndAnsweredWithUserIdNull() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        // One order, two purchases (two chains); another order elsewhere.
        apple.production.addTransaction(Self.coins("2800001"), orderId: "MK5TTTVWJH")
        apple.production.addTransaction(Self.coins("2800002"), orderId: "MK5TTTVWJH")
        apple.production.addTransaction(Self.coins("2800003"), orderId: "MLOTHER001")
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client("read")

        let found = try api.get("/v1/lookup?orderId=MK5TTTVWJH")
        #expect(found.status == 200, "\(found.text)")
        #expect(found.json["userId"] == .null)
        #expect(found.json["originalTransactionId"]?.stringValue == "2800001")
        #expect(found.json["transactionId"] == nil, "no transaction was named")
        #expect(found.json["orderId"]?.stringValue == "MK5TTTVWJH")
        #expect(found.json["environment"]?.stringValue == "Production")
        let listed = found.json["transactions"]?.arrayValue ?? []
        #expect(listed.map { $0["transactionId"]?.stringValue } == ["2800001", "2800002"])
        #expect(listed.allSatisfy { $0["recorded"]?.boolValue == true && $0["userId"] == .null }, "\(listed)")
        // Apple was asked once, at /inApps/v1/lookup/{orderId}, with a token it accepted.
        let asked = apple.production.requests.filter { $0.path.hasPrefix("/inApps/v1/lookup/") }
        #expect(asked.map(\.path) == ["/inApps/v1/lookup/MK5TTTVWJH"])
        #expect(asked.map(\.status) == [200])
        #expect(apple.sandbox.requests.isEmpty, "status 1 or 0 is an answer, not a 4040010")

        // Recorded: the ledger answers the chains now, unclaimed.
        #expect(try api.get("/v1/subscriptions/2800002").json["owner"] == .null)
        #expect(
            LookupTests.fields(try api.get("/v1/lookup?transactionId=2800002")) == [
                "userId": .null, "originalTransactionId": "2800002", "transactionId": "2800002",
            ])
        // Asked again: the same answer, both duplicates (Apple re-signs, the log does not grow).
        let again = try api.get("/v1/lookup?orderId=MK5TTTVWJH")
        #expect(again.status == 200)
        #expect((again.json["transactions"]?.arrayValue ?? []).allSatisfy { $0["recorded"]?.boolValue == false })

        // Claimed later by a posted purchase: the order answers its owner.
        #expect(try service.client().purchase("u-o1", Self.coins("2800002")).status == 200)
        let owned = try api.get("/v1/lookup?orderId=MK5TTTVWJH")
        #expect(owned.json["transactions"]?[1]?["userId"]?.stringValue == "u-o1", "\(owned.text)")
        #expect(owned.json["userId"] == .null, "the order's first purchase is still nobody's")
    }

    @Test func anOrderWithARegisteredTokenGoesToItsUser() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let token = try #require(
            try service.client().post("/v1/users/u-o2/app-account-token", [:]).json["appAccountToken"]?.stringValue)
        apple.production.addTransaction(
            Self.coins("2800101", ["appAccountToken": .string(token)]), orderId: "MK5TOKEN01")
        let found = try service.client("read").get("/v1/lookup?orderId=MK5TOKEN01")
        #expect(found.status == 200, "\(found.text)")
        #expect(found.json["userId"]?.stringValue == "u-o2")
        #expect(found.json["originalTransactionId"]?.stringValue == "2800101")
        #expect(try service.client().user("u-o2")["balances"]?["coins"]?.int64Value == 100)
    }

    @Test func anOrderAppleCallsInvalidIs404AndRecordsNothing() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        apple.production.addTransaction(Self.coins("2800201"), orderId: "MK5KNOWN01")
        let service = try SyncTests.service(apple)
        defer { service.stop() }
        let api = service.client("read")
        let missing = try api.get("/v1/lookup?orderId=MK5NOTTHERE")
        #expect(missing.status == 404, "\(missing.text)")
        #expect(missing.json["code"]?.stringValue == "not_found")
        let asked = apple.production.requests.filter { $0.path == "/inApps/v1/lookup/MK5NOTTHERE" }
        #expect(asked.count == 1 && asked[0].status == 200, "Apple answered status 1, not an error")
        #expect(try api.get("/v1/lookup?transactionId=2800201").status == 404, "nothing was recorded")
    }

    @Test func theStandInChecksTheTokenAndAnswersStatusOneForAnUnknownOrder() throws {
        let key = AppStoreServerKey.testKey()
        let standIn = try AppStoreServerAPIStandIn(
            environment: .production, bundleId: "com.example.app", issuerId: key.issuerId, keyId: key.keyId,
            publicKeyPEM: key.publicKeyPEM)
        let jws = Self.coins("2800301")
        standIn.addTransaction(jws, orderId: "MK5STANDIN")
        standIn.addTransaction(Self.coins("2800302"))  // in no order
        let now: Int64 = 1_780_000_000_000
        func ask(_ orderId: String, _ authorization: String?) throws -> (status: Int, json: JSONValue?) {
            let answer = standIn.answer(
                method: "GET", path: "/inApps/v1/lookup/" + orderId, query: [:], authorization: authorization, body: [],
                nowMillis: now)
            return (answer.status, answer.body.isEmpty ? nil : try JSONValue.parse(answer.body))
        }
        let good = "Bearer " + AppStoreServerToken(key: key, bundleId: "com.example.app").token(nowMillis: now)
        let known = try ask("MK5STANDIN", good)
        #expect(known.status == 200)
        #expect(known.json == ["status": 0, "signedTransactions": [.string(jws)]])
        #expect(try ask("MK5UNKNOWN", good).json == ["status": 1, "signedTransactions": []])
        #expect(try ask("MK5STANDIN", nil).status == 401)
        #expect(try ask("MK5STANDIN", "Bearer not.a.jwt").status == 401)
        let otherApp = "Bearer " + AppStoreServerToken(key: key, bundleId: "com.example.other").token(nowMillis: now)
        #expect(try ask("MK5STANDIN", otherApp).status == 401)
        let stale =
            "Bearer " + AppStoreServerToken(key: key, bundleId: "com.example.app").token(nowMillis: now - 7_200_000)
        #expect(try ask("MK5STANDIN", stale).status == 401)
    }
}
