import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// api.md §8, notification types: `ONE_TIME_CHARGE` carries a one-time purchase and is applied as
/// one, whether it arrives before or after the app's own `POST /v1/purchases` of the same
/// transaction; `METADATA_UPDATE`, `MIGRATION` (also spelled `MIGRATE`) and `PRICE_CHANGE` are
/// verified, recorded, shown on the timeline and applied through what they carry.
@Suite(.tags(.database)) final class NewerNotificationTypesTests {
    let service: TestService
    let api: ServiceHTTPClient

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func coins(_ transactionId: String) -> [String: JSONValue] {
        let now = service.clock.now
        return Mint.transaction(
            transactionId, product: TestService.coins, type: "Consumable", purchase: now - 1_000, expires: nil,
            signed: now - 1_000)
    }

    @Test(arguments: [false, true])
    func aOneTimeChargeCountsOnceWhicheverArrivesFirst(notificationFirst: Bool) throws {
        let user = notificationFirst ? "u-otc-late" : "u-otc-early"
        let purchase = coins(notificationFirst ? "2770002" : "2770001")
        let notification = Mint.notification("ONE_TIME_CHARGE", transaction: purchase)
        if notificationFirst {
            #expect(try api.notify(notification).status == 200)
            #expect(try api.purchase(user, Mint.signed(purchase)).status == 200)
        } else {
            #expect(try api.purchase(user, Mint.signed(purchase)).status == 200)
            #expect(try api.notify(notification).status == 200)
        }
        let customer = try api.user(user)
        #expect(customer["balances"]?["coins"]?.int64Value == 100, "\(customer)")  // one coins100, credited once
        let timeline = try api.events(user)
        #expect(timeline.filter { $0["type"]?.stringValue == "TransactionRecorded" }.count == 1)
        let notes = timeline.filter { $0["type"]?.stringValue == "NotificationReceived" }
        #expect(notes.compactMap { $0["data"]?["notificationType"]?.stringValue } == ["ONE_TIME_CHARGE"], "\(timeline)")
    }

    @Test(arguments: ["METADATA_UPDATE", "MIGRATION", "MIGRATE", "PRICE_CHANGE"])
    func theNewerTypesAreRecordedShownAndAppliedThroughWhatTheyCarry(type: String) throws {
        let now = service.clock.now
        let chain = String(2_771_000 + type.count)  // one chain per type
        let user = "u-type-\(type.lowercased())"
        let first = Mint.transaction(
            chain, product: TestService.monthly, purchase: now - 10 * day, expires: now + 20 * day,
            signed: now - 10 * day)
        #expect(try api.purchase(user, Mint.signed(first)).status == 200)
        // What the notification carries is applied: here a renewal info turning auto-renew off.
        let renewal = Mint.renewal(autoRenew: false, signed: now - 1_000)
        let answer = try api.notify(Mint.notification(type, transaction: first, renewal: renewal))
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.json["result"]?.stringValue == "recorded")
        let customer = try api.user(user)
        #expect(customer["subscriptions"]?[0]?["autoRenew"] == .bool(false), "\(customer)")
        let notes = try api.events(user).filter { $0["type"]?.stringValue == "NotificationReceived" }
        #expect(notes.compactMap { $0["data"]?["notificationType"]?.stringValue } == [type])
    }
}
