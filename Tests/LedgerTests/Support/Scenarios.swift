@testable import Ledger

/// The stories of docs/domain.md as deliveries, each with the change types its users must see.
enum Scenarios {
    static let t0 = F.t0, day = F.day, hour = F.hour, minute: Int64 = 60_000
    static let end1 = t0 + F.month
    static let end2 = end1 + F.month
    static let p1 = F.period("1000", start: t0)
    static let p2 = F.period("1001", start: end1, signed: end1 - hour)
    static let p3 = F.period("1002", start: end2, signed: end2 - hour)

    static func revoked(_ t: Transaction, at: Int64, type: String? = nil) -> Transaction {
        var t = t
        t.signedDate = at
        t.revocationDate = at
        t.revocationReason = type == nil ? 1 : 0
        t.revocationType = type
        return t
    }

    /// A prorated refund (App Store Server API 1.19) of `t`.
    static func prorated(_ t: Transaction, at: Int64, percentage: Int64) -> Transaction {
        var t = revoked(t, at: at, type: "REFUND_PRORATED")
        t.revocationPercentage = percentage
        return t
    }

    static func resigned(_ t: Transaction, at: Int64) -> Transaction {
        var t = t
        t.signedDate = at
        return t
    }

    /// u-1 posts the first period and Apple's SUBSCRIBED brings the same with a renewal info.
    static var subscribed: [Delivery] {
        [
            .post("u-1", [p1], at: t0),
            .notify("SUBSCRIBED", "INITIAL_BUY", at: t0 + minute, transaction: p1, renewal: F.renewal(signed: t0)),
        ]
    }

    static func renewal(
        at: Int64, autoRenew: Bool = true, autoRenewProductId: String? = F.monthly, product: String = F.monthly,
        grace: Int64? = nil, retry: Bool? = nil, intent: Int64? = nil
    ) -> RenewalInfo {
        F.renewal(
            signed: at, autoRenew: autoRenew, autoRenewProductId: autoRenewProductId, product: product, grace: grace,
            retry: retry, intent: intent)
    }

    static let all: [Scenario] = [
        Scenario(
            name: "initial purchase and renewals",
            deliveries: subscribed + [
                .notify("DID_RENEW", at: end1 - hour, transaction: p2, renewal: renewal(at: end1 - hour)),
                .notify("DID_RENEW", at: end2 - hour, transaction: p3, renewal: renewal(at: end2 - hour)),
            ],
            end: end2 + day, expected: ["u-1": [.initialPurchase, .renewal, .renewal]]),
        Scenario(
            name: "upgrade applies at once",
            deliveries: subscribed + [
                .notify(
                    "DID_CHANGE_RENEWAL_PREF", "UPGRADE", at: t0 + 10 * day,
                    transaction: F.period("1001", product: F.plus, start: t0 + 10 * day),
                    renewal: renewal(at: t0 + 10 * day, autoRenewProductId: F.plus, product: F.plus)),
                .post("u-1", [upgraded(p1, at: t0 + 10 * day)], at: t0 + 10 * day + minute),
            ],
            end: t0 + 20 * day, expected: ["u-1": [.initialPurchase, .productChange]]),
        Scenario(
            name: "downgrade waits for the next renewal",
            deliveries: subscribed + [
                .notify(
                    "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", at: t0 + day,
                    renewal: renewal(at: t0 + day, autoRenewProductId: F.yearly)),
                .notify(
                    "DID_RENEW", at: end1 - hour,
                    transaction: F.period(
                        "1001", product: F.yearly, start: end1, length: 365 * day, signed: end1 - hour),
                    renewal: renewal(at: end1 - hour, autoRenewProductId: F.yearly, product: F.yearly)),
            ],
            end: end1 + day, expected: ["u-1": [.initialPurchase, .productChange]]),
        Scenario(
            name: "crossgrade taken back renews the same product",
            deliveries: subscribed + [
                .notify(
                    "DID_CHANGE_RENEWAL_PREF", at: t0 + day,
                    renewal: renewal(at: t0 + day, autoRenewProductId: F.yearly)),
                .notify("DID_CHANGE_RENEWAL_PREF", at: t0 + 2 * day, renewal: renewal(at: t0 + 2 * day)),
                .notify("DID_RENEW", at: end1 - hour, transaction: p2, renewal: renewal(at: end1 - hour)),
            ],
            end: end1 + day, expected: ["u-1": [.initialPurchase, .renewal]]),
        Scenario(
            name: "cancellation, uncancellation, expiry by time",
            deliveries: subscribed + [
                .notify(
                    "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", at: t0 + 5 * day,
                    renewal: renewal(at: t0 + 5 * day, autoRenew: false)),
                .notify(
                    "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", at: t0 + 6 * day,
                    renewal: renewal(at: t0 + 6 * day)),
                .notify(
                    "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", at: t0 + 7 * day,
                    renewal: renewal(at: t0 + 7 * day, autoRenew: false)),
                .notify(
                    "EXPIRED", "VOLUNTARY", at: end1 + minute,
                    renewal: renewal(at: end1 + minute, autoRenew: false, intent: 1)),
            ],
            end: end1 + day,
            expected: ["u-1": [.initialPurchase, .cancellation, .uncancellation, .cancellation, .expiration]]),
        Scenario(
            name: "billing retry without grace, then recovery",
            deliveries: subscribed + [
                .notify(
                    "DID_FAIL_TO_RENEW", at: end1 - hour, renewal: renewal(at: end1 - hour, retry: true, intent: 2)),
                .notify(
                    "DID_RENEW", "BILLING_RECOVERY", at: end1 + 3 * day,
                    transaction: F.period("1001", start: end1 + 3 * day),
                    renewal: renewal(at: end1 + 3 * day, retry: false)),
            ],
            end: end1 + 4 * day, expected: ["u-1": [.initialPurchase, .billingIssue, .expiration, .billingRecovered]]),
        Scenario(
            name: "grace period, then recovery",
            deliveries: subscribed + [
                .notify(
                    "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: end1 - hour,
                    renewal: renewal(at: end1 - hour, grace: end1 + 16 * day, retry: true, intent: 2)),
                .notify(
                    "DID_RENEW", "BILLING_RECOVERY", at: end1 + 5 * day,
                    transaction: F.period("1001", start: end1 + 5 * day),
                    renewal: renewal(at: end1 + 5 * day, retry: false)),
            ],
            end: end1 + 6 * day, expected: ["u-1": [.initialPurchase, .billingIssue, .billingRecovered]]),
        Scenario(
            name: "grace period ends in billing retry, then expiry",
            deliveries: subscribed + [
                .notify(
                    "DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: end1 - hour,
                    renewal: renewal(at: end1 - hour, grace: end1 + 6 * day, retry: true, intent: 2)),
                .notify(
                    "GRACE_PERIOD_EXPIRED", at: end1 + 6 * day + minute,
                    renewal: renewal(at: end1 + 6 * day + minute, grace: end1 + 6 * day, retry: true, intent: 2)),
                .notify(
                    "EXPIRED", "BILLING_RETRY", at: end1 + 60 * day,
                    renewal: renewal(at: end1 + 60 * day, autoRenew: false, retry: false, intent: 2)),
            ],
            end: end1 + 61 * day,
            expected: ["u-1": [.initialPurchase, .billingIssue, .billingIssue, .expiration]]),
        Scenario(
            name: "refund, then refund reversed",
            deliveries: subscribed + [
                .notify("REFUND", at: t0 + 5 * day, transaction: revoked(p1, at: t0 + 5 * day)),
                .notify("REFUND_REVERSED", at: t0 + 8 * day, transaction: resigned(p1, at: t0 + 8 * day)),
            ],
            end: t0 + 9 * day, expected: ["u-1": [.initialPurchase, .refund, .refundReversed]]),
        Scenario(
            name: "refund of an older period keeps the current one",
            deliveries: subscribed + [
                .notify("DID_RENEW", at: end1 - hour, transaction: p2, renewal: renewal(at: end1 - hour)),
                .notify("REFUND", at: end1 + 2 * day, transaction: revoked(p1, at: end1 + 2 * day)),
                .notify("REFUND", at: end1 + 5 * day, transaction: revoked(p2, at: end1 + 5 * day)),
            ],
            end: end1 + 6 * day, expected: ["u-1": [.initialPurchase, .renewal, .refund]]),
        Scenario(
            name: "non-consumable refunded and given back",
            deliveries: [
                .post("u-1", [F.nonConsumable("6000")], at: t0),
                .notify(
                    "REFUND", at: t0 + day, otid: "6000",
                    transaction: F.nonConsumable("6000", signed: t0 + day, revoked: t0 + day)),
                .notify(
                    "REFUND_REVERSED", at: t0 + 2 * day, otid: "6000",
                    transaction: F.nonConsumable("6000", signed: t0 + 2 * day)),
            ],
            end: t0 + 3 * day, expected: ["u-1": [.nonConsumablePurchase, .refund, .refundReversed]]),
        Scenario(
            name: "consumables, a debit, a refund into debt",
            deliveries: [
                .post("u-1", [F.consumable("5000")], at: t0),
                .post(
                    "u-1", [F.consumable("5001", product: Scenario.bundle, quantity: 2, at: t0 + hour)], at: t0 + hour),
                debit(150, key: "k1", at: t0 + 2 * hour),
                debit(150, key: "k1", at: t0 + 3 * hour),
                .notify(
                    "REFUND", at: t0 + day, otid: "5000",
                    transaction: F.consumable("5000", signed: t0 + day, revoked: t0 + day)),
                debit(10, key: "k2", at: t0 + 2 * day),
            ],
            end: t0 + 3 * day,
            expected: ["u-1": [.consumablePurchase, .consumablePurchase, .consumablePurchase, .balanceDebit, .refund]]),
        Scenario(
            // 100 + 300 − 30 = 370; −50 (50 % of 100) = 320; −99 (33.333 % of 300 = 99.999) = 221;
            // the first refund reversed: +50 = 271.
            name: "prorated refunds of coins take back their share, a reversal gives it back",
            deliveries: [
                .post("u-1", [F.consumable("5000")], at: t0),
                .post("u-1", [F.consumable("5001", quantity: 3, at: t0 + hour)], at: t0 + hour),
                debit(30, key: "k1", at: t0 + 2 * hour),
                .notify(
                    "REFUND", at: t0 + day, otid: "5000",
                    transaction: prorated(F.consumable("5000"), at: t0 + day, percentage: 50_000)),
                .notify(
                    "REFUND", at: t0 + day + hour, otid: "5001",
                    transaction: prorated(
                        F.consumable("5001", quantity: 3, at: t0 + hour), at: t0 + day + hour, percentage: 33_333)),
                .notify(
                    "REFUND_REVERSED", at: t0 + 2 * day, otid: "5000",
                    transaction: F.consumable("5000", signed: t0 + 2 * day)),
            ],
            end: t0 + 3 * day,
            expected: [
                "u-1": [.consumablePurchase, .consumablePurchase, .balanceDebit, .refund, .refund, .refundReversed]
            ]),
        Scenario(
            name: "non-renewing passes stack and run out; one without duration until refunded",
            deliveries: [
                .post("u-1", [pass("9000", at: t0)], at: t0),
                .post(
                    "u-1", [F.oneOff("9100", product: F.season, type: "Non-Renewing Subscription", at: t0 + day)],
                    at: t0 + day),
                .notify(
                    "REFUND", at: t0 + 2 * day, otid: "9100",
                    transaction: F.oneOff(
                        "9100", product: F.season, type: "Non-Renewing Subscription", at: t0 + day,
                        signed: t0 + 2 * day,
                        revoked: t0 + 2 * day)),
                .post("u-1", [pass("9001", at: t0 + 10 * day)], at: t0 + 10 * day),
            ],
            end: t0 + 61 * day,
            expected: ["u-1": [.nonRenewingPurchase, .nonRenewingPurchase, .refund, .nonRenewingPurchase, .expiration]]),
        Scenario(
            name: "transfer to another user under the transfer policy",
            users: ["u-1", "u-2"],
            deliveries: subscribed + [
                .post("u-2", [p1], at: t0 + 3 * day),
                .notify("DID_RENEW", at: end1 - hour, transaction: p2, renewal: renewal(at: end1 - hour)),
            ],
            end: end1 + day, expected: ["u-1": [.initialPurchase, .transfer], "u-2": [.transfer, .renewal]]),
        Scenario(
            name: "keep policy refuses the second user",
            users: ["u-1", "u-2"],
            deliveries: subscribed + [.post("u-2", [p1], at: t0 + 3 * day, policy: .keep)],
            end: t0 + 4 * day, expected: ["u-1": [.initialPurchase]]),
        Scenario(
            name: "facts before the claim count when it comes; appAccountToken claims",
            deliveries: [
                .notify("SUBSCRIBED", "INITIAL_BUY", at: t0, transaction: p1, renewal: renewal(at: t0)),
                .notify("DID_RENEW", at: end1 - hour, transaction: p2, renewal: renewal(at: end1 - hour)),
                .post("u-1", [p1], at: end1 + day),
                .notify(
                    "SUBSCRIBED", "INITIAL_BUY", at: end1 + 2 * day, otid: "2000", transaction: tokened,
                    tokenClaims: [("2000", "u-1")]),
            ],
            end: end1 + 3 * day, expected: ["u-1": [.initialPurchase, .initialPurchase]]),
        Scenario(
            name: "family sharing ends with REVOKE",
            deliveries: [
                .post("u-1", [F.period("1000", start: t0, ownership: "FAMILY_SHARED")], at: t0),
                .post("u-1", [F.nonConsumable("6000", ownership: "FAMILY_SHARED")], at: t0 + hour),
                .notify(
                    "REVOKE", at: t0 + 2 * day,
                    transaction: revoked(
                        F.period("1000", start: t0, ownership: "FAMILY_SHARED"), at: t0 + 2 * day, type: "FAMILY_REVOKE"
                    )),
                .notify(
                    "REVOKE", at: t0 + 3 * day, otid: "6000",
                    transaction: F.nonConsumable(
                        "6000", signed: t0 + 3 * day, revoked: t0 + 3 * day, ownership: "FAMILY_SHARED")),
            ],
            end: t0 + 4 * day, expected: ["u-1": [.initialPurchase, .nonConsumablePurchase, .refund, .refund]]),
        Scenario(
            name: "free trial, conversion, cancellation, offer code after the lapse",
            deliveries: [
                .post("u-1", [trial], at: t0),
                .notify(
                    "DID_RENEW", at: t0 + 7 * day - hour,
                    transaction: F.period("1001", start: t0 + 7 * day, signed: t0 + 7 * day - hour),
                    renewal: renewal(at: t0 + 7 * day - hour)),
                .notify(
                    "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", at: t0 + 10 * day,
                    renewal: renewal(at: t0 + 10 * day, autoRenew: false)),
                .notify(
                    "EXPIRED", "VOLUNTARY", at: t0 + 37 * day + minute,
                    renewal: renewal(at: t0 + 37 * day + minute, autoRenew: false, intent: 1)),
                .notify(
                    "OFFER_REDEEMED", "RESUBSCRIBE", at: t0 + 47 * day,
                    transaction: F.period(
                        "1002", start: t0 + 47 * day, length: 3 * F.month, offerType: 3,
                        offerDiscountType: "PAY_UP_FRONT"),
                    renewal: renewal(at: t0 + 47 * day)),
            ],
            end: t0 + 48 * day,
            expected: ["u-1": [.initialPurchase, .renewal, .cancellation, .expiration, .renewal]]),
        Scenario(
            name: "Apple silent at the period's end, then the renewal date extended",
            deliveries: [
                .post("u-1", [p1], at: t0),
                .notify("RENEWAL_EXTENDED", at: end1 + 2 * day, transaction: extended),
            ],
            end: end1 + 8 * day, expected: ["u-1": [.initialPurchase, .expiration, .renewal, .expiration]]),
        Scenario(
            name: "promotional grants: for a while, forever, revoked, coins",
            deliveries: [
                .command(
                    "grant vip", at: t0,
                    .grant(userId: "u-1", entitlement: "vip", reason: "support", expiresAt: t0 + 10 * day, at: t0)),
                .command(
                    "grant plus", at: t0 + 11 * day,
                    .grant(userId: "u-1", entitlement: "plus", reason: "support", expiresAt: nil, at: t0 + 11 * day)),
                .command(
                    "revoke plus", at: t0 + 12 * day,
                    .revoke(userId: "u-1", entitlement: "plus", reason: "abuse", at: t0 + 12 * day)),
                .command(
                    "credit coins", at: t0 + 13 * day,
                    .credit(
                        userId: "u-1", currency: "coins", amount: 25, idempotencyKey: "c1", reason: "sorry",
                        at: t0 + 13 * day)),
            ],
            end: t0 + 14 * day,
            expected: [
                "u-1": [.promotionalGrant, .expiration, .promotionalGrant, .promotionalRevoke, .promotionalGrant]
            ]),
        Scenario(
            name: "a TEST notification changes nothing",
            deliveries: subscribed + [
                .apple(
                    "TEST", at: t0 + day,
                    [.recordNotification(F.note("TEST", signed: t0 + day, otid: nil, uuid: "test-1"))])
            ],
            end: t0 + 2 * day, expected: ["u-1": [.initialPurchase]]),
    ]

    static func upgraded(_ t: Transaction, at: Int64) -> Transaction {
        var t = t
        t.signedDate = at
        t.isUpgraded = true
        return t
    }

    static func debit(_ amount: Int64, key: String, at: Int64) -> Delivery {
        .command(
            "debit \(key)", at: at,
            .debit(userId: "u-1", currency: "coins", amount: amount, idempotencyKey: key, reason: "sword", at: at))
    }

    static func pass(_ tid: String, at: Int64) -> Transaction {
        F.oneOff(tid, product: Scenario.pass, type: "Non-Renewing Subscription", at: at)
    }

    static var tokened: Transaction {
        var t = F.period("2000", otid: "2000", product: F.yearly, start: end1 + 2 * day, length: 365 * day)
        t.appAccountToken = "u-1"
        return t
    }

    static var trial: Transaction {
        F.period("1000", start: t0, length: 7 * day, offerType: 1, offerDiscountType: "FREE_TRIAL")
    }

    static var extended: Transaction {
        var t = p1
        t.signedDate = end1 + 2 * day
        t.expiresDate = end1 + 7 * day
        return t
    }
}

extension Scenario {
    /// A generated history (HistoryGenerator) as deliveries: each fact when it was signed, the
    /// user's stream as it was decided, all for u-1; no expected sequence, only the invariants.
    static func generated(seed: UInt64) -> Scenario {
        let history = History.generate(seed: seed)
        var deliveries: [Delivery] = []
        for (index, event) in history.userEvents.enumerated() {
            let at: Int64
            switch event {
            case .balanceDebited(_, _, _, _, _, _, let instant), .chainClaimed(_, _, _, let instant),
                .entitlementGranted(_, _, _, _, let instant):
                at = instant
            default: at = F.t0
            }
            deliveries.append(Delivery(at: at, source: .user, decided: [event], label: "user \(index)"))
        }
        for (index, fact) in history.facts.enumerated() {
            let at: Int64
            switch fact {
            case .recordTransaction(let t), .recordTransactionCopy(let t): at = t.signedDate
            case .recordRenewalInfo(let r), .recordRenewalInfoCopy(let r): at = r.signedDate
            case .recordNotification(let n): at = n.signedDate
            }
            deliveries.append(.apple("fact \(index)", at: at, [fact]))
        }
        // In time order; the user's stream first at a tie (its claims come before the facts).
        deliveries = deliveries.enumerated().sorted {
            ($0.element.at, $0.element.source == .user ? 0 : 1, $0.offset)
                < ($1.element.at, $1.element.source == .user ? 0 : 1, $1.offset)
        }.map(\.element)
        let end = (deliveries.map(\.at).max() ?? F.t0) + 400 * F.day
        return Scenario(name: "generated \(seed)", catalog: F.catalog, deliveries: deliveries, end: end, expected: [:])
    }
}
