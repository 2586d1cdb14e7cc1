import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §8, `GET /v1/users/{userId}/eligibility?productId=P`: Apple's rule for introductory
/// offers — not for a customer who had one, or any subscription in P's group, before; also not
/// when another user bought so with the same Apple Account.
@Suite(.tags(.database)) final class EligibilityTests {
    let service: TestService
    let api: ServiceHTTPClient

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func eligibility(_ userId: String, _ productId: String) throws -> HTTPTestConnection.Response {
        try api.get("/v1/users/\(userId)/eligibility?productId=\(productId)")
    }

    func subscribe(
        _ userId: String, _ transactionId: String, product: String, _ extra: [String: JSONValue] = [:]
    ) throws {
        let now = service.clock.now
        // Mint's subscriptions carry Apple's subscriptionGroupIdentifier 21000001 (the test vectors').
        let transaction = Mint.transaction(
            transactionId, product: product, purchase: now - day, expires: now + 29 * day, signed: now - day, extra)
        #expect(try api.purchase(userId, Mint.signed(transaction)).status == 200)
    }

    @Test func applesRuleUserByUserAndAcrossAnAppleAccount() throws {
        // Never bought anything: eligible (the group is learned from anyone's transactions).
        try subscribe(
            "u-el-trial", "2760001", product: TestService.monthly, ["offerType": 1, "offerDiscountType": "FREE_TRIAL"])
        let fresh = try eligibility("u-el-new", TestService.monthly)
        #expect(fresh.status == 200, "\(fresh.text)")
        #expect(fresh.json["introductoryOffer"] == .bool(true))
        #expect(fresh.json["reason"]?.stringValue == "eligible")
        #expect(fresh.json["group"]?.stringValue == "21000001")

        // Had the trial: not again.
        let trial = try eligibility("u-el-trial", TestService.monthly)
        #expect(trial.json["introductoryOffer"] == .bool(false))
        #expect(trial.json["reason"]?.stringValue == "introductory_offer_used")
        #expect(trial.json["sameAppleAccountAs"] == .null)

        // Subscribed to another product of the group (yearly, no offer): not for monthly either.
        try subscribe("u-el-yearly", "2760002", product: TestService.yearly)
        let sibling = try eligibility("u-el-yearly", TestService.monthly)
        #expect(sibling.json["introductoryOffer"] == .bool(false))
        #expect(sibling.json["reason"]?.stringValue == "subscribed_in_group")
        // A product of another group is another matter.
        try subscribe("u-el-other", "2760003", product: TestService.yearly, ["subscriptionGroupIdentifier": "99000009"])
        #expect(try eligibility("u-el-other", TestService.monthly).json["introductoryOffer"] == .bool(true))

        // Another user who bought with the same Apple Account had the trial: not eligible.
        try subscribe(
            "u-el-shared1", "2760004", product: TestService.monthly,
            ["offerType": 1, "appTransactionId": "704289572399401"])
        let now = service.clock.now
        let ads = Mint.transaction(
            "2760005", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appTransactionId": "704289572399401"])
        #expect(try api.purchase("u-el-shared2", Mint.signed(ads)).status == 200)
        let shared = try eligibility("u-el-shared2", TestService.monthly)
        #expect(shared.json["introductoryOffer"] == .bool(false), "\(shared.text)")
        #expect(shared.json["reason"]?.stringValue == "introductory_offer_used")
        #expect(shared.json["sameAppleAccountAs"]?.stringValue == "u-el-shared1")
    }

    @Test func badQuestionsAreRefused() throws {
        #expect(try api.get("/v1/users/u-el-x/eligibility").status == 400)
        let consumable = try eligibility("u-el-x", TestService.coins)
        #expect(consumable.status == 422, "\(consumable.text)")
        let unknown = try eligibility("u-el-x", "com.example.never.seen")
        #expect(unknown.status == 404, "\(unknown.text)")
    }
}
