import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Apple's `appTransactionId` (App Store Server API 1.15, one per Apple Account and app) is
/// recorded with every transaction that carries it and shown where transactions are shown;
/// transactions without it read exactly as before.
@Suite(.tags(.database)) final class AppTransactionIdTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    @Test func theChainAndTheCustomerShowTheAppTransactionId() throws {
        let now = service.clock.now
        let appTransactionId = "704289572311524"
        let monthly = Mint.transaction(
            "2700001", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day,
            ["appTransactionId": .string(appTransactionId)])
        let removeAds = Mint.transaction(
            "2700002", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day, ["appTransactionId": .string(appTransactionId)])
        #expect(try api.purchase("u-atx", Mint.signed(monthly)).status == 200)
        let answer = try api.purchase("u-atx", Mint.signed(removeAds))
        #expect(answer.status == 200, "\(answer.text)")

        let chain = try api.get("/v1/subscriptions/2700001").json
        #expect(chain["transactions"]?[0]?["appTransactionId"]?.stringValue == appTransactionId, "\(chain)")
        let customer = try api.user("u-atx")
        #expect(customer["subscriptions"]?[0]?["appTransactionId"]?.stringValue == appTransactionId, "\(customer)")
        #expect(customer["nonConsumables"]?[0]?["appTransactionId"]?.stringValue == appTransactionId, "\(customer)")
        #expect(answer.json["customer"] == customer)
        // Recorded in the event, under Apple's name.
        let recorded = try api.events("u-atx").filter { $0["type"]?.stringValue == "TransactionRecorded" }
        #expect(recorded.count == 2)
        #expect(recorded.allSatisfy { $0["data"]?["appTransactionId"]?.stringValue == appTransactionId })
    }

    @Test func aTransactionWithoutItReadsAsBefore() throws {
        let now = service.clock.now
        let monthly = Mint.transaction(
            "2700101", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day,
            ["appTransactionId": .null])  // the test vectors carry one by default
        #expect(try api.purchase("u-atx-none", Mint.signed(monthly)).status == 200)
        let customer = try api.userBytes("u-atx-none")
        #expect(!String(decoding: customer, as: UTF8.self).contains("appTransactionId"))
        let chain = try api.get("/v1/subscriptions/2700101")
        #expect(!chain.text.contains("appTransactionId"), "\(chain.text)")
        let recorded = try api.events("u-atx-none").first { $0["type"]?.stringValue == "TransactionRecorded" }
        #expect(recorded?["data"]?["appTransactionId"] == nil)
    }
}
