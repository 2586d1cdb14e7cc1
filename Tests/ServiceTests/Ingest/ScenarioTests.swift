import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Every scenario of docs/domain.md, driven through HTTP with minted signed vectors and asserted on
/// the `GET /v1/users/{id}` fields docs/api.md names. One service (and database) per test: tests move its clock.
@Suite(.tags(.database)) final class ScenarioTests {
    let service: TestService
    let api: ServiceHTTPClient

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func subscription(_ document: JSONValue, _ chain: String) throws -> JSONValue {
        try #require(document["subscriptions"]?.arrayValue?.first { $0["originalTransactionId"]?.stringValue == chain })
    }

    @Test func consumableCreditsOncePerTransactionDebitsAndARefundLeavesVisibleDebt() throws {
        let now = service.clock.now
        let coins = Mint.transaction(
            "1000001", product: TestService.coins, type: "Consumable", purchase: now - 2 * second, expires: nil,
            signed: now - 2 * second)
        let posted = try api.purchase("u-coins", Mint.signed(coins))
        #expect(posted.status == 200)
        #expect(posted.json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        #expect(posted.json["customer"]?["balances"]?["coins"]?.int64Value == 100)

        let debit = try api.debit("u-coins", "coins", amount: 30, key: "order-881", reason: "sword")
        #expect(debit.status == 200)
        #expect(debit.json["balance"]?.int64Value == 70)
        #expect(debit.json["result"]?.stringValue == "debited")
        let overdraw = try api.debit("u-coins", "coins", amount: 71, key: "order-882")
        #expect(overdraw.status == 409)
        #expect(overdraw.json["code"]?.stringValue == "insufficient_balance")
        #expect(overdraw.json["balance"]?.int64Value == 70)
        #expect(try api.user("u-coins")["balances"]?["coins"]?.int64Value == 70)

        var refunded = coins
        refunded["revocationDate"] = .int(now - second)
        refunded["revocationReason"] = .int(1)
        refunded["signedDate"] = .int(now - second)
        #expect(
            try api.notify(Mint.notification("REFUND", transaction: refunded)).json["result"]?.stringValue == "recorded"
        )
        let after = try api.user("u-coins")
        #expect(after["balances"]?["coins"]?.int64Value == -30)
    }

    @Test func nonConsumableRefundThenReversalGivesItBack() throws {
        let now = service.clock.now
        let bought = Mint.transaction(
            "1000101", product: TestService.removeAds, type: "Non-Consumable", purchase: now - 3 * second, expires: nil,
            signed: now - 3 * second)
        #expect(try api.purchase("u-ads", Mint.signed(bought)).status == 200)
        var document = try api.user("u-ads")
        #expect(document["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(document["entitlements"]?["no_ads"]?["source"]?.stringValue == "non_consumable")
        #expect(document["entitlements"]?["no_ads"]?["productId"]?.stringValue == TestService.removeAds)
        #expect(document["nonConsumables"]?[0]?["transactionId"]?.stringValue == "1000101")
        #expect(document["nonConsumables"]?[0]?["purchasedAt"]?.stringValue == RFC3339.format(now - 3 * second))
        #expect(document["nonConsumables"]?[0]?["revokedAt"]?.isNull == true)
        #expect(document["nonConsumables"]?[0]?["ownership"]?.stringValue == "PURCHASED")

        var refunded = bought
        refunded["revocationDate"] = .int(now - 2 * second)
        refunded["revocationReason"] = .int(1)
        refunded["signedDate"] = .int(now - 2 * second)
        #expect(try api.notify(Mint.notification("REFUND", transaction: refunded)).status == 200)
        document = try api.user("u-ads")
        #expect(document["entitlements"]?["no_ads"]?["active"]?.boolValue == false)
        #expect(document["nonConsumables"]?[0]?["revokedAt"]?.stringValue == RFC3339.format(now - 2 * second))

        var reversed = bought
        reversed["signedDate"] = .int(now - second)
        #expect(try api.notify(Mint.notification("REFUND_REVERSED", transaction: reversed)).status == 200)
        document = try api.user("u-ads")
        #expect(document["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(document["nonConsumables"]?[0]?["revokedAt"]?.isNull == true)
    }

    @Test func subscriptionRenewsThenExpiresWithNoEvent() throws {
        let now = service.clock.now
        let first = Mint.transaction(
            "1000201", product: TestService.monthly, purchase: now - 30 * day + hour, expires: now + hour,
            signed: now - 30 * day + hour)
        #expect(try api.purchase("u-renew", Mint.signed(first)).status == 200)
        var document = try api.user("u-renew")
        var sub = try subscription(document, "1000201")
        #expect(sub["status"]?.stringValue == "active")
        #expect(sub["productId"]?.stringValue == TestService.monthly)
        #expect(sub["expiresAt"]?.stringValue == RFC3339.format(now + hour))
        #expect(sub["gracePeriodExpiresAt"]?.isNull == true)
        #expect(sub["environment"]?.stringValue == "Sandbox")
        #expect(sub["ownership"]?.stringValue == "PURCHASED")
        let pro = try #require(document["entitlements"]?["pro"])
        #expect(pro["active"]?.boolValue == true)
        #expect(pro["source"]?.stringValue == "subscription")
        #expect(pro["originalTransactionId"]?.stringValue == "1000201")
        #expect(pro["inGracePeriod"]?.boolValue == false)
        #expect(pro["expiresAt"]?.stringValue == RFC3339.format(now + hour))

        let renewal = Mint.transaction(
            "1000202", chain: "1000201", product: TestService.monthly, purchase: now + hour,
            expires: now + hour + 30 * day,
            signed: now, ["transactionReason": .string("RENEWAL")])
        let renewed = Mint.notification(
            "DID_RENEW", transaction: renewal, renewal: Mint.renewal(signed: now))
        #expect(try api.notify(renewed).json["result"]?.stringValue == "recorded")
        service.clock.advance(by: 2 * hour)
        document = try api.user("u-renew")
        sub = try subscription(document, "1000201")
        #expect(sub["status"]?.stringValue == "active")
        #expect(sub["expiresAt"]?.stringValue == RFC3339.format(now + hour + 30 * day))
        #expect(sub["autoRenew"]?.boolValue == true)
        #expect(sub["autoRenewProductId"]?.stringValue == TestService.monthly)
        #expect(document["entitlements"]?["pro"]?["willRenew"]?.boolValue == true)

        service.clock.advance(by: 31 * day)
        document = try api.user("u-renew")
        #expect(try subscription(document, "1000201")["status"]?.stringValue == "expired")
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == false)
    }

    @Test func gracePeriodKeepsAccessThenBillingRetryEndsItThenRecoveryRestoresIt() throws {
        let now = service.clock.now
        let period = Mint.transaction(
            "1000301", product: TestService.monthly, purchase: now - 30 * day + hour, expires: now + hour,
            signed: now - 30 * day + hour)
        #expect(try api.purchase("u-grace", Mint.signed(period)).status == 200)
        let failed = Mint.notification(
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: period,
            renewal: Mint.renewal(billingRetry: true, grace: now + hour + 3 * day, signed: now))
        #expect(try api.notify(failed).status == 200)

        service.clock.advance(by: 2 * hour)
        var document = try api.user("u-grace")
        var sub = try subscription(document, "1000301")
        #expect(sub["status"]?.stringValue == "in_grace_period")
        #expect(sub["gracePeriodExpiresAt"]?.stringValue == RFC3339.format(now + hour + 3 * day))
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == true)
        #expect(document["entitlements"]?["pro"]?["inGracePeriod"]?.boolValue == true)

        service.clock.advance(by: 4 * day)
        document = try api.user("u-grace")
        sub = try subscription(document, "1000301")
        #expect(sub["status"]?.stringValue == "in_billing_retry")
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == false)
        #expect(document["entitlements"]?["pro"]?["inGracePeriod"]?.boolValue == false)

        let recoveredAt = now + hour + 4 * day
        let recovery = Mint.transaction(
            "1000302", chain: "1000301", product: TestService.monthly, purchase: recoveredAt,
            expires: recoveredAt + 30 * day, signed: recoveredAt - hour)
        let recovered = Mint.notification(
            "DID_RENEW", "BILLING_RECOVERY", transaction: recovery, renewal: Mint.renewal(signed: recoveredAt))
        #expect(try api.notify(recovered).status == 200)
        document = try api.user("u-grace")
        #expect(try subscription(document, "1000301")["status"]?.stringValue == "active")
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == true)
    }

    @Test func billingRetryWithoutGraceAndVoluntaryExpiry() throws {
        let now = service.clock.now
        let retrying = Mint.transaction(
            "1000401", product: TestService.monthly, purchase: now - 30 * day, expires: now + hour,
            signed: now - 30 * day)
        #expect(try api.purchase("u-retry", Mint.signed(retrying)).status == 200)
        #expect(
            try api.notify(
                Mint.notification(
                    "DID_FAIL_TO_RENEW", transaction: retrying, renewal: Mint.renewal(billingRetry: true, signed: now))
            ).status == 200)
        let cancelled = Mint.transaction(
            "1000411", product: TestService.yearly, purchase: now - 300 * day, expires: now + hour,
            signed: now - 300 * day)
        #expect(try api.purchase("u-retry", Mint.signed(cancelled)).status == 200)
        #expect(
            try api.notify(
                Mint.notification(
                    "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: cancelled,
                    renewal: Mint.renewal(autoRenew: false, product: TestService.yearly, signed: now))
            ).status == 200)

        var document = try api.user("u-retry")
        #expect(try subscription(document, "1000411")["autoRenew"]?.boolValue == false)
        #expect(try subscription(document, "1000401")["autoRenew"]?.boolValue == true)
        service.clock.advance(by: 2 * hour)
        document = try api.user("u-retry")
        #expect(try subscription(document, "1000401")["status"]?.stringValue == "in_billing_retry")
        #expect(try subscription(document, "1000411")["status"]?.stringValue == "expired")
        let pro = try #require(document["entitlements"]?["pro"])
        #expect(pro["active"]?.boolValue == false)
        #expect(pro["willRenew"]?.boolValue == false)
    }

    @Test func refundOfAnOlderPeriodKeepsTheCurrentOneAndARefundOfTheCurrentRevokes() throws {
        let now = service.clock.now
        let old = Mint.transaction(
            "1000501", product: TestService.monthly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day)
        let current = Mint.transaction(
            "1000502", chain: "1000501", product: TestService.monthly, purchase: now - 10 * day,
            expires: now + 20 * day,
            signed: now - 10 * day)
        #expect(try api.purchase("u-refund", Mint.signed(old)).status == 200)
        #expect(try api.purchase("u-refund", Mint.signed(current)).status == 200)

        var oldRefunded = old
        oldRefunded["revocationDate"] = .int(now - hour)
        oldRefunded["revocationReason"] = .int(0)
        oldRefunded["signedDate"] = .int(now - hour)
        #expect(try api.notify(Mint.notification("REFUND", transaction: oldRefunded)).status == 200)
        var document = try api.user("u-refund")
        var sub = try subscription(document, "1000501")
        #expect(sub["status"]?.stringValue == "active")
        #expect(sub["expiresAt"]?.stringValue == RFC3339.format(now + 20 * day))
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == true)

        var currentRefunded = current
        currentRefunded["revocationDate"] = .int(now - second)
        currentRefunded["revocationReason"] = .int(1)
        currentRefunded["signedDate"] = .int(now - second)
        #expect(try api.notify(Mint.notification("REFUND", transaction: currentRefunded)).status == 200)
        document = try api.user("u-refund")
        sub = try subscription(document, "1000501")
        #expect(sub["status"]?.stringValue == "revoked")
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == false)
    }

    @Test func upgradeAppliesTheNewProductAtOnce() throws {
        let now = service.clock.now
        let monthly = Mint.transaction(
            "1000601", product: TestService.monthly, purchase: now - 5 * day, expires: now + 25 * day,
            signed: now - 5 * day)
        #expect(try api.purchase("u-upgrade", Mint.signed(monthly)).status == 200)
        var upgraded = monthly
        upgraded["isUpgraded"] = .bool(true)
        upgraded["signedDate"] = .int(now - hour)
        let yearly = Mint.transaction(
            "1000602", chain: "1000601", product: TestService.yearly, purchase: now - hour,
            expires: now - hour + 365 * day,
            signed: now - hour)
        #expect(try api.purchase("u-upgrade", Mint.signed(upgraded)).status == 200)
        #expect(
            try api.notify(
                Mint.notification(
                    "DID_CHANGE_RENEWAL_PREF", "UPGRADE", transaction: yearly,
                    renewal: Mint.renewal(product: TestService.yearly, signed: now - hour))
            ).status == 200)
        let document = try api.user("u-upgrade")
        let sub = try subscription(document, "1000601")
        #expect(sub["productId"]?.stringValue == TestService.yearly)
        #expect(sub["status"]?.stringValue == "active")
        #expect(sub["expiresAt"]?.stringValue == RFC3339.format(now - hour + 365 * day))
        #expect(document["entitlements"]?["pro"]?["productId"]?.stringValue == TestService.yearly)
        #expect(document["subscriptions"]?.arrayValue?.count == 1)
    }

    @Test func upgradedTransactionGrantsNothingEvenWithTheLaterExpiry() throws {
        let now = service.clock.now
        // The old yearly period would run longer, but it was upgraded away: the monthly one is current.
        var yearly = Mint.transaction(
            "1000651", product: TestService.yearly, purchase: now - 5 * day, expires: now + 360 * day,
            signed: now - hour,
            ["isUpgraded": .bool(true)])
        yearly["isUpgraded"] = .bool(true)
        let monthly = Mint.transaction(
            "1000652", chain: "1000651", product: TestService.monthly, purchase: now - hour, expires: now + hour,
            signed: now - hour)
        #expect(try api.purchase("u-upgrade2", Mint.signed(yearly)).status == 200)
        #expect(try api.purchase("u-upgrade2", Mint.signed(monthly)).status == 200)
        service.clock.advance(by: 2 * hour)
        let document = try api.user("u-upgrade2")
        let sub = try subscription(document, "1000651")
        #expect(sub["productId"]?.stringValue == TestService.monthly)
        #expect(sub["status"]?.stringValue == "expired")
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == false)
    }

    @Test func familySharedGrantsLikeAPurchaseAndEndsWithRevoke() throws {
        let now = service.clock.now
        let shared = Mint.transaction(
            "1000701", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day,
            ["inAppOwnershipType": .string("FAMILY_SHARED")])
        #expect(try api.purchase("u-family", Mint.signed(shared)).status == 200)
        var document = try api.user("u-family")
        #expect(try subscription(document, "1000701")["ownership"]?.stringValue == "FAMILY_SHARED")
        #expect(try subscription(document, "1000701")["status"]?.stringValue == "active")
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == true)

        var revoked = shared
        revoked["revocationDate"] = .int(now - hour)
        revoked["revocationReason"] = .int(0)
        revoked["revocationType"] = .string("FAMILY_REVOKE")
        revoked["signedDate"] = .int(now - hour)
        #expect(try api.notify(Mint.notification("REVOKE", transaction: revoked)).status == 200)
        document = try api.user("u-family")
        #expect(try subscription(document, "1000701")["status"]?.stringValue == "revoked")
        #expect(document["entitlements"]?["pro"]?["active"]?.boolValue == false)
    }

    @Test func downgradeOnlyChangesTheRenewalProductUntilTheNextRenewal() throws {
        let now = service.clock.now
        let yearly = Mint.transaction(
            "1000801", product: TestService.yearly, purchase: now - 10 * day, expires: now + 355 * day,
            signed: now - 10 * day)
        #expect(try api.purchase("u-downgrade", Mint.signed(yearly)).status == 200)
        #expect(
            try api.notify(
                Mint.notification(
                    "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", transaction: yearly,
                    renewal: Mint.renewal(product: TestService.monthly, signed: now - day))
            ).status == 200)
        let document = try api.user("u-downgrade")
        let sub = try subscription(document, "1000801")
        #expect(sub["productId"]?.stringValue == TestService.yearly)
        #expect(sub["autoRenewProductId"]?.stringValue == TestService.monthly)
        #expect(sub["expiresAt"]?.stringValue == RFC3339.format(now + 355 * day))
        #expect(document["entitlements"]?["pro"]?["productId"]?.stringValue == TestService.yearly)
    }

    @Test func productsMissingFromTheConfigAreStillRecordedAndGrantTheirOwnId() throws {
        let now = service.clock.now
        let gems = Mint.transaction(
            "1000901", product: "com.example.gems", type: "Consumable", purchase: now - day, expires: nil,
            signed: now - day,
            ["quantity": .int(3)])
        let skin = Mint.transaction(
            "1000902", product: "com.example.skin", type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        #expect(try api.purchase("u-unknown", Mint.signed(gems)).status == 200)
        #expect(try api.purchase("u-unknown", Mint.signed(skin)).status == 200)
        let document = try api.user("u-unknown")
        #expect(document["balances"]?["com.example.gems"]?.int64Value == 3)
        #expect(document["entitlements"]?["com.example.skin"]?["active"]?.boolValue == true)
        let bundle = Mint.transaction(
            "1000903", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
            signed: now - day,
            ["quantity": .int(2)])
        #expect(
            try api.purchase("u-unknown", Mint.signed(bundle)).json["customer"]?["balances"]?["coins"]?.int64Value
                == 200)
    }
}
