import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Arrival order means nothing: the facts of every docs/domain.md scenario, delivered in order to one
/// service and shuffled (seeded) with every delivery repeated to another, give identical documents.
@Suite(.tags(.database, .slow)) final class ShuffleTests {
    enum Delivery {
        case purchase(String)
        case notification(String)
    }

    static func revoked(_ t: [String: JSONValue], at instant: Int64, type: String? = nil) -> [String: JSONValue] {
        var t = t
        t["revocationDate"] = .int(instant)
        t["revocationReason"] = .int(type == nil ? 1 : 0)
        t["signedDate"] = .int(instant)
        if let type { t["revocationType"] = .string(type) }
        return t
    }

    /// The facts of every scenario, in the order they happened, all for one user.
    static func deliveries(now: Int64) -> [Delivery] {
        let m = TestService.monthly
        let y = TestService.yearly
        var d: [Delivery] = []
        // Consumables: one kept, one refunded.
        let coins = Mint.transaction(
            "8000001", product: TestService.coins, type: "Consumable", purchase: now - 9 * day, expires: nil,
            signed: now - 9 * day)
        let coins2 = Mint.transaction(
            "8000002", product: TestService.coins, type: "Consumable", purchase: now - 8 * day, expires: nil,
            signed: now - 8 * day)
        d += [
            .purchase(Mint.signed(coins)), .purchase(Mint.signed(coins2)),
            .notification(Mint.notification("REFUND", transaction: revoked(coins2, at: now - 7 * day))),
        ]
        // Non-consumable: refund, then reversal.
        let ads = Mint.transaction(
            "8000101", product: TestService.removeAds, type: "Non-Consumable", purchase: now - 9 * day, expires: nil,
            signed: now - 9 * day)
        var reversed = ads
        reversed["signedDate"] = .int(now - 5 * day)
        d += [
            .purchase(Mint.signed(ads)),
            .notification(Mint.notification("REFUND", transaction: revoked(ads, at: now - 6 * day))),
            .notification(Mint.notification("REFUND_REVERSED", transaction: reversed)),
        ]
        // Renewal.
        let r1 = Mint.transaction(
            "8000201", product: m, purchase: now - 29 * day, expires: now + day, signed: now - 29 * day)
        let r2 = Mint.transaction(
            "8000202", chain: "8000201", product: m, purchase: now + day, expires: now + 31 * day, signed: now - hour)
        d += [
            .purchase(Mint.signed(r1)),
            .notification(Mint.notification("DID_RENEW", transaction: r2, renewal: Mint.renewal(signed: now - hour))),
        ]
        // Grace period, then billing retry.
        let g1 = Mint.transaction(
            "8000301", product: m, purchase: now - 29 * day, expires: now + hour, signed: now - 29 * day)
        d += [
            .purchase(Mint.signed(g1)),
            .notification(
                Mint.notification(
                    "DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: g1,
                    renewal: Mint.renewal(billingRetry: true, grace: now + 3 * day, signed: now - 2 * hour))),
        ]
        // Voluntary expiry.
        let e1 = Mint.transaction(
            "8000401", product: y, purchase: now - 300 * day, expires: now + 2 * hour, signed: now - 300 * day)
        d += [
            .purchase(Mint.signed(e1)),
            .notification(
                Mint.notification(
                    "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: e1,
                    renewal: Mint.renewal(autoRenew: false, product: y, signed: now - 3 * hour))),
        ]
        // Refund of an older period, then of the current one.
        let f1 = Mint.transaction(
            "8000501", product: m, purchase: now - 40 * day, expires: now - 10 * day, signed: now - 40 * day)
        let f2 = Mint.transaction(
            "8000502", chain: "8000501", product: m, purchase: now - 10 * day, expires: now + 20 * day,
            signed: now - 10 * day)
        d += [
            .purchase(Mint.signed(f1)), .notification(Mint.notification("DID_RENEW", transaction: f2)),
            .notification(Mint.notification("REFUND", transaction: revoked(f1, at: now - 4 * day))),
            .notification(Mint.notification("REFUND", transaction: revoked(f2, at: now - 3 * day))),
        ]
        // Upgrade.
        let u1 = Mint.transaction(
            "8000601", product: m, purchase: now - 5 * day, expires: now + 25 * day, signed: now - 5 * day)
        var u1Upgraded = u1
        u1Upgraded["isUpgraded"] = .bool(true)
        u1Upgraded["signedDate"] = .int(now - 2 * day)
        let u2 = Mint.transaction(
            "8000602", chain: "8000601", product: y, purchase: now - 2 * day, expires: now + 363 * day,
            signed: now - 2 * day)
        d += [
            .purchase(Mint.signed(u1)), .purchase(Mint.signed(u1Upgraded)),
            .notification(
                Mint.notification(
                    "DID_CHANGE_RENEWAL_PREF", "UPGRADE", transaction: u2,
                    renewal: Mint.renewal(product: y, signed: now - 2 * day))),
        ]
        // Family sharing, then REVOKE.
        let s1 = Mint.transaction(
            "8000701", product: m, purchase: now - day, expires: now + 29 * day, signed: now - day,
            ["inAppOwnershipType": .string("FAMILY_SHARED")])
        d += [
            .purchase(Mint.signed(s1)),
            .notification(Mint.notification("REVOKE", transaction: revoked(s1, at: now - hour, type: "FAMILY_REVOKE"))),
        ]
        return d
    }

    func deliver(_ deliveries: [Delivery], to api: ServiceHTTPClient) throws {
        for delivery in deliveries {
            let response: ServiceHTTPClient.Response
            switch delivery {
            case .purchase(let jws): response = try api.purchase("u-shuffle", jws)
            case .notification(let jws): response = try api.notify(jws)
            }
            #expect(response.status == 200, "\(response.text)")
        }
    }

    static func withoutVersion(_ document: [UInt8]) throws -> [UInt8] {
        guard case .object(var members) = try JSONValue.parse(document) else { return document }
        #expect(members.removeValue(forKey: "version")?.int64Value ?? 0 > 0)
        return JSONValue.object(members).serialized(sortedKeys: true)
    }

    @Test func shuffledRepeatedDeliveriesGiveTheSameDocuments() throws {
        let now = TestVectors.nowMillis
        let deliveries = Self.deliveries(now: now)
        var rng = SplitMix64(seed: 20_261_129)
        let shuffled = (deliveries + deliveries).shuffled(using: &rng)

        let clock = TestClock()
        let inOrder = try TestService(clock: clock)
        defer { inOrder.stop() }
        let scrambled = try TestService(clock: clock)
        defer { scrambled.stop() }
        let a = inOrder.client()
        let b = scrambled.client()
        try deliver(deliveries, to: a)
        try deliver(shuffled, to: b)
        #expect(try a.debit("u-shuffle", "coins", amount: 30, key: "after").json["balance"]?.int64Value == 70)
        #expect(try b.debit("u-shuffle", "coins", amount: 30, key: "after").json["balance"]?.int64Value == 70)

        // Judged now, in grace, after grace and expiry, and much later.
        for offset in [0, 3 * hour, 4 * day, 40 * day, 400 * day] {
            clock.set(now + offset)
            // `version` is a log position: a posted copy of what a notification already recorded
            // (the purchase of a reversed refund arriving after the reversal) appends nothing,
            // so the two logs differ in length. Everything the document says must agree.
            let expected = try Self.withoutVersion(a.userBytes("u-shuffle"))
            let actual = try Self.withoutVersion(b.userBytes("u-shuffle"))
            #expect(
                String(decoding: actual, as: UTF8.self) == String(decoding: expected, as: UTF8.self),
                "at now + \(offset) ms")
        }
        clock.set(now + 3 * hour)
        let document = try a.user("u-shuffle")
        let status = Dictionary(
            uniqueKeysWithValues: (document["subscriptions"]?.arrayValue ?? []).map {
                ($0["originalTransactionId"]?.stringValue ?? "", $0["status"]?.stringValue ?? "")
            })
        #expect(
            status == [
                "8000201": "active", "8000301": "in_grace_period", "8000401": "expired", "8000501": "revoked",
                "8000601": "active", "8000701": "revoked",
            ])
        #expect(document["balances"]?["coins"]?.int64Value == 70)
        #expect(document["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(document["entitlements"]?["pro"]?["productId"]?.stringValue == TestService.yearly)
        clock.set(now + 4 * day)
        #expect(
            try a.user("u-shuffle")["subscriptions"]?.arrayValue?.first {
                $0["originalTransactionId"]?.stringValue == "8000301"
            }?["status"]?.stringValue == "in_billing_retry")
    }
}
