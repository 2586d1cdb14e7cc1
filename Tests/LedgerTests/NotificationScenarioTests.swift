import Testing

@testable import Ledger

/// Every App Store Server Notification V2 type/subtype that changes access (docs/FORMATS.md §2),
/// expressed as the facts the notification carries. Access is judged by the facts, never by
/// the notification type.
@Suite struct NotificationScenarioTests {
    let p1 = F.period("1000", start: F.t0)
    var end1: Int64 { p1.expiresDate! }

    /// u-1 owns chain 1000, bought at t0 with a renewal info saying auto-renew on.
    func subscribed() -> World {
        var world = World()
        try! world.claim("1000", for: "u-1")
        world.notify(
            F.note("SUBSCRIBED", "INITIAL_BUY", signed: F.t0), transaction: p1, renewal: F.renewal(signed: F.t0))
        return world
    }

    @Test func subscribedInitialBuyGrantsAccessThatWillRenew() {
        let doc = subscribed().customer(at: F.t0 + 1)
        #expect(
            doc.entitlements["pro"]
                == EntitlementState(
                    active: true, expiresAt: end1, productId: F.monthly, source: .subscription,
                    originalTransactionId: "1000",
                    willRenew: true, inGracePeriod: false))
        #expect(doc.subscriptions.map(\.status) == [.active])
    }

    @Test func subscribedResubscribeRestoresAccessAfterALapse() {
        var world = subscribed()
        world.notify(
            F.note("EXPIRED", "VOLUNTARY", signed: end1), renewal: F.renewal(signed: end1, autoRenew: false, intent: 1))
        #expect(!world.pro(at: end1 + F.day))
        let again = F.period("1001", start: end1 + 10 * F.day)
        world.notify(
            F.note("SUBSCRIBED", "RESUBSCRIBE", signed: again.purchaseDate), transaction: again,
            renewal: F.renewal(signed: again.purchaseDate))
        #expect(world.pro(at: again.purchaseDate + 1))
        #expect(world.customer(at: again.purchaseDate + 1).entitlements["pro"]?.expiresAt == again.expiresDate)
    }

    @Test func didRenewExtendsAccessIntoTheNextPeriod() {
        var world = subscribed()
        let p2 = F.period("1001", start: end1)
        world.notify(F.note("DID_RENEW", signed: end1), transaction: p2, renewal: F.renewal(signed: end1))
        #expect(world.pro(at: end1 + F.day))
        #expect(world.customer(at: end1 + F.day).subscriptions.first?.expiresAt == p2.expiresDate)
    }

    @Test func didRenewBillingRecoveryEndsBillingRetry() {
        var world = subscribed()
        world.notify(
            F.note("DID_FAIL_TO_RENEW", signed: end1), renewal: F.renewal(signed: end1, retry: true, intent: 2))
        #expect(world.status(at: end1 + F.day) == .inBillingRetry)
        let recovered = F.period("1001", start: end1 + 3 * F.day)
        world.notify(
            F.note("DID_RENEW", "BILLING_RECOVERY", signed: recovered.purchaseDate), transaction: recovered,
            renewal: F.renewal(signed: recovered.purchaseDate, retry: false))
        #expect(world.status(at: recovered.purchaseDate + 1) == .active)
        #expect(world.pro(at: recovered.purchaseDate + 1))
    }

    @Test func didFailToRenewGracePeriodKeepsAccessUntilGraceEnds() {
        var world = subscribed()
        let grace = end1 + 16 * F.day
        world.notify(
            F.note("DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: end1),
            renewal: F.renewal(signed: end1, grace: grace, retry: true, intent: 2))
        let doc = world.customer(at: end1 + F.day)
        #expect(doc.entitlements["pro"]?.active == true)
        #expect(doc.entitlements["pro"]?.inGracePeriod == true)
        #expect(doc.subscriptions.first?.gracePeriodExpiresAt == grace)
        #expect(world.pro(at: grace - 1))
        #expect(!world.pro(at: grace))
    }

    @Test func didFailToRenewWithoutGraceStopsAccess() {
        var world = subscribed()
        world.notify(
            F.note("DID_FAIL_TO_RENEW", signed: end1), renewal: F.renewal(signed: end1, retry: true, intent: 2))
        #expect(world.status(at: end1) == .inBillingRetry)
        #expect(!world.pro(at: end1))
        #expect(world.pro(at: end1 - 1))
    }

    @Test func gracePeriodExpiredTurnsAccessOffWhileRetryGoesOn() {
        var world = subscribed()
        let grace = end1 + 6 * F.day
        world.notify(
            F.note("DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: end1),
            renewal: F.renewal(signed: end1, grace: grace, retry: true, intent: 2))
        world.notify(
            F.note("GRACE_PERIOD_EXPIRED", signed: grace),
            renewal: F.renewal(signed: grace, grace: grace, retry: true, intent: 2))
        #expect(world.status(at: grace) == .inBillingRetry)
        #expect(!world.pro(at: grace))
    }

    @Test(
        arguments: [
            ("VOLUNTARY", Int64(1), false), ("BILLING_RETRY", 2, false), ("PRICE_INCREASE", 3, false),
            ("PRODUCT_NOT_FOR_SALE", 4, false), (nil, 5, false),
        ] as [(String?, Int64, Bool)])
    func expiredEndsAccessWhateverTheSubtype(subtype: String?, intent: Int64, retry: Bool) {
        var world = subscribed()
        world.notify(
            F.note("EXPIRED", subtype, signed: end1),
            renewal: F.renewal(signed: end1, autoRenew: false, retry: retry, intent: intent))
        #expect(world.status(at: end1) == .expired)
        let doc = world.customer(at: end1)
        #expect(doc.entitlements["pro"]?.active == false)
        #expect(doc.entitlements["pro"]?.willRenew == false)
    }

    @Test func didChangeRenewalPrefUpgradeGrantsTheNewProductAtOnce() {
        var world = subscribed()
        let at = F.t0 + 10 * F.day
        var old = p1
        old.signedDate = at
        old.isUpgraded = true
        let plus = F.period("1001", product: F.plus, start: at)
        world.notify(
            F.note("DID_CHANGE_RENEWAL_PREF", "UPGRADE", signed: at), transaction: plus,
            renewal: F.renewal(signed: at, autoRenewProductId: F.plus, product: F.plus))
        world.record(old)
        let doc = world.customer(at: at + 1)
        #expect(doc.entitlements["plus"]?.active == true)
        #expect(doc.entitlements["pro"]?.productId == F.plus)
        #expect(doc.subscriptions.first?.productId == F.plus)
    }

    @Test func didChangeRenewalPrefDowngradeWaitsForTheNextRenewal() {
        var world = subscribed()
        world.notify(
            F.note("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", signed: F.t0 + F.day),
            renewal: F.renewal(signed: F.t0 + F.day, autoRenewProductId: F.yearly))
        var sub = world.customer(at: F.t0 + 2 * F.day).subscriptions[0]
        #expect(sub.productId == F.monthly)
        #expect(sub.autoRenewProductId == F.yearly)
        world.notify(
            F.note("DID_CHANGE_RENEWAL_PREF", signed: F.t0 + 2 * F.day),
            renewal: F.renewal(signed: F.t0 + 2 * F.day, autoRenewProductId: F.monthly))
        sub = world.customer(at: F.t0 + 3 * F.day).subscriptions[0]
        #expect(sub.autoRenewProductId == F.monthly)
    }

    @Test func didChangeRenewalStatusTogglesWillRenewOnly() {
        var world = subscribed()
        world.notify(
            F.note("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signed: F.t0 + F.day),
            renewal: F.renewal(signed: F.t0 + F.day, autoRenew: false))
        var pro = world.customer(at: F.t0 + 2 * F.day).entitlements["pro"]
        #expect(pro?.active == true)
        #expect(pro?.willRenew == false)
        world.notify(
            F.note("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signed: F.t0 + 2 * F.day),
            renewal: F.renewal(signed: F.t0 + 2 * F.day, autoRenew: true))
        pro = world.customer(at: F.t0 + 3 * F.day).entitlements["pro"]
        #expect(pro?.willRenew == true)
    }

    @Test func offerRedeemedGrantsTheOfferPeriod() {
        var world = subscribed()
        let offer = F.period("1001", start: end1, length: 3 * F.month, offerType: 3, offerDiscountType: "PAY_UP_FRONT")
        world.notify(
            F.note("OFFER_REDEEMED", "RESUBSCRIBE", signed: end1), transaction: offer,
            renewal: F.renewal(signed: end1))
        #expect(world.pro(at: end1 + 2 * F.month))
        #expect(world.customer(at: end1 + 1).subscriptions[0].offerType == 3)
    }

    @Test func refundOfTheCurrentPeriodRevokesAndReversalRegrants() {
        var world = subscribed()
        var refunded = p1
        refunded.signedDate = F.t0 + 5 * F.day
        refunded.revocationDate = refunded.signedDate
        world.notify(F.note("REFUND", signed: refunded.signedDate), transaction: refunded)
        #expect(world.status(at: F.t0 + 6 * F.day) == .revoked)
        #expect(!world.pro(at: F.t0 + 6 * F.day))
        var reversed = p1
        reversed.signedDate = F.t0 + 8 * F.day
        world.notify(F.note("REFUND_REVERSED", signed: reversed.signedDate), transaction: reversed)
        #expect(world.pro(at: F.t0 + 9 * F.day))
    }

    @Test func refundOfAConsumableTakesBackItsCredit() {
        var world = World()
        let bought = F.consumable("5000")
        try! world.claim("5000", for: "u-1")
        world.notify(F.note("ONE_TIME_CHARGE", signed: F.t0, otid: "5000"), transaction: bought)
        #expect(world.customer(at: F.t0).balances == ["coins": 100])
        var refunded = bought
        refunded.signedDate += F.day
        refunded.revocationDate = refunded.signedDate
        world.notify(F.note("REFUND", signed: refunded.signedDate, otid: "5000"), transaction: refunded)
        #expect(world.customer(at: F.t0 + 2 * F.day).balances == ["coins": 0])
    }

    @Test func refundOfANonConsumableRemovesItAndReversalGivesItBack() {
        var world = World()
        let bought = F.nonConsumable("6000")
        try! world.claim("6000", for: "u-1")
        world.record(bought)
        #expect(world.customer(at: F.t0).entitlements["no_ads"]?.active == true)
        var refunded = bought
        refunded.signedDate += F.day
        refunded.revocationDate = refunded.signedDate
        world.notify(F.note("REFUND", signed: refunded.signedDate, otid: "6000"), transaction: refunded)
        let doc = world.customer(at: F.t0 + 2 * F.day)
        #expect(doc.entitlements["no_ads"]?.active == false)
        #expect(doc.nonConsumables.first?.revokedAt == refunded.revocationDate)
        var reversed = bought
        reversed.signedDate += 2 * F.day
        world.notify(F.note("REFUND_REVERSED", signed: reversed.signedDate, otid: "6000"), transaction: reversed)
        #expect(world.customer(at: F.t0 + 3 * F.day).entitlements["no_ads"]?.active == true)
    }

    @Test func revokeEndsAFamilySharedSubscription() {
        var world = World()
        try! world.claim("1000", for: "u-1")
        let shared = F.period("1000", start: F.t0, ownership: "FAMILY_SHARED")
        world.notify(F.note("SUBSCRIBED", "INITIAL_BUY", signed: F.t0), transaction: shared)
        #expect(world.pro(at: F.t0 + 1))
        var revoked = shared
        revoked.signedDate = F.t0 + 2 * F.day
        revoked.revocationDate = revoked.signedDate
        revoked.revocationType = "FAMILY_REVOKE"
        world.notify(F.note("REVOKE", signed: revoked.signedDate), transaction: revoked)
        #expect(!world.pro(at: F.t0 + 3 * F.day))
        #expect(world.customer(at: F.t0 + 3 * F.day).subscriptions[0].ownership == "FAMILY_SHARED")
    }

    @Test func revokeEndsAFamilySharedNonConsumable() {
        var world = World()
        try! world.claim("6000", for: "u-1")
        world.record(F.nonConsumable("6000", ownership: "FAMILY_SHARED"))
        world.notify(
            F.note("REVOKE", signed: F.t0 + F.day, otid: "6000"),
            transaction: F.nonConsumable(
                "6000", signed: F.t0 + F.day, revoked: F.t0 + F.day, ownership: "FAMILY_SHARED"))
        #expect(world.customer(at: F.t0 + 2 * F.day).entitlements["no_ads"]?.active == false)
    }

    @Test func renewalExtendedMovesExpiresAtLater() {
        var world = subscribed()
        var extended = p1
        extended.signedDate = F.t0 + 20 * F.day
        extended.expiresDate = end1 + 7 * F.day
        world.notify(
            F.note("RENEWAL_EXTENDED", signed: extended.signedDate), transaction: extended,
            renewal: F.renewal(signed: extended.signedDate))
        #expect(world.pro(at: end1 + 6 * F.day))
        #expect(!world.pro(at: end1 + 7 * F.day))
    }

    @Test func oneTimeChargeCreditsConsumablesAndGrantsOneOffs() {
        var world = World()
        for (tid, t) in [
            ("7000", F.consumable("7000", quantity: 3)), ("7001", F.nonConsumable("7001")),
            ("7002", F.oneOff("7002", product: F.season, type: "Non-Renewing Subscription")),
        ] {
            try! world.claim(tid, for: "u-1")
            world.notify(F.note("ONE_TIME_CHARGE", signed: F.t0, otid: tid), transaction: t)
        }
        let doc = world.customer(at: F.t0 + 1)
        #expect(doc.balances == ["coins": 300])
        #expect(doc.entitlements["no_ads"]?.active == true)
        #expect(doc.entitlements["season"]?.active == true)
        #expect(doc.entitlements["season"]?.source == .nonRenewingSubscription)
    }

    @Test func testNotificationIsRecordedOnceAndChangesNothing() {
        var world = subscribed()
        let before = world.customer(at: F.t0 + 1)
        let test = F.note("TEST", signed: F.t0, otid: nil, uuid: "t-1")
        #expect(world.record(test) == [.notificationReceived(test)])
        #expect(world.record(test) == [])
        #expect(world.customer(at: F.t0 + 1) == before)
    }
}
