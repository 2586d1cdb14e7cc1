@testable import Ledger

/// Products, instants and fact builders shared by the Ledger tests.
enum F {
    static let t0: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00.000Z
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000
    static let month: Int64 = 30 * day

    static let monthly = "com.example.game.pro.monthly"
    static let yearly = "com.example.game.pro.yearly"
    static let plus = "com.example.game.plus.monthly"
    static let coins = "com.example.game.coins100"
    static let removeAds = "com.example.game.removeads"
    static let lifetime = "com.example.game.pro.lifetime"
    static let season = "com.example.game.season"

    static let catalog = Catalog(products: [
        monthly: Product(type: .subscription, entitlements: ["pro"]),
        yearly: Product(type: .subscription, entitlements: ["pro"]),
        plus: Product(type: .subscription, entitlements: ["pro", "plus"]),
        coins: Product(type: .consumable, grants: ["coins": 100]),
        removeAds: Product(type: .nonConsumable, entitlements: ["no_ads"]),
        lifetime: Product(type: .nonConsumable, entitlements: ["pro"]),
        season: Product(type: .nonRenewing, entitlements: ["season"]),
    ])

    /// One auto-renewable period `[start, start + length)`.
    static func period(
        _ transactionId: String, otid: String = "1000", product: String = monthly, start: Int64,
        length: Int64 = month, signed: Int64? = nil, revoked: Int64? = nil, revocationType: String? = nil,
        upgraded: Bool = false, ownership: String = "PURCHASED", offerType: Int64? = nil,
        offerDiscountType: String? = nil, expires: Int64? = nil
    ) -> Transaction {
        Transaction(
            transactionId: transactionId, originalTransactionId: otid, productId: product, bundleId: "com.example.game",
            type: "Auto-Renewable Subscription", purchaseDate: start, originalPurchaseDate: start,
            expiresDate: expires ?? start + length, inAppOwnershipType: ownership, signedDate: signed ?? start,
            revocationDate: revoked, revocationReason: revoked == nil ? nil : 0, revocationType: revocationType,
            isUpgraded: upgraded, offerType: offerType, offerDiscountType: offerDiscountType,
            transactionReason: transactionId == otid ? "PURCHASE" : "RENEWAL", subscriptionGroupIdentifier: "pro")
    }

    /// A one-off purchase (otid == transactionId).
    static func oneOff(
        _ transactionId: String, product: String, type: String, quantity: Int64 = 1, at: Int64 = t0,
        signed: Int64? = nil, revoked: Int64? = nil, ownership: String = "PURCHASED"
    ) -> Transaction {
        Transaction(
            transactionId: transactionId, originalTransactionId: transactionId, productId: product,
            bundleId: "com.example.game", type: type, purchaseDate: at, quantity: quantity,
            inAppOwnershipType: ownership, signedDate: signed ?? at, revocationDate: revoked,
            revocationReason: revoked == nil ? nil : 1)
    }

    static func consumable(
        _ tid: String, product: String = coins, quantity: Int64 = 1, at: Int64 = t0,
        signed: Int64? = nil, revoked: Int64? = nil
    ) -> Transaction {
        oneOff(tid, product: product, type: "Consumable", quantity: quantity, at: at, signed: signed, revoked: revoked)
    }

    static func nonConsumable(
        _ tid: String, product: String = removeAds, at: Int64 = t0, signed: Int64? = nil,
        revoked: Int64? = nil, ownership: String = "PURCHASED"
    ) -> Transaction {
        oneOff(
            tid, product: product, type: "Non-Consumable", at: at, signed: signed, revoked: revoked,
            ownership: ownership)
    }

    static func renewal(
        otid: String = "1000", signed: Int64, autoRenew: Bool = true, autoRenewProductId: String? = monthly,
        product: String = monthly, grace: Int64? = nil, retry: Bool? = nil, intent: Int64? = nil
    ) -> RenewalInfo {
        RenewalInfo(
            originalTransactionId: otid, productId: product, autoRenewProductId: autoRenewProductId,
            autoRenewStatus: autoRenew ? 1 : 0, isInBillingRetryPeriod: retry, gracePeriodExpiresDate: grace,
            expirationIntent: intent, signedDate: signed)
    }

    static func note(
        _ type: String, _ subtype: String? = nil, signed: Int64, otid: String? = "1000",
        tid: String? = nil, uuid: String? = nil
    ) -> NotificationFact {
        NotificationFact(
            notificationUUID: uuid ?? "\(type)-\(subtype ?? "")-\(signed)-\(otid ?? "")", notificationType: type,
            subtype: subtype, signedDate: signed, environment: "Production", originalTransactionId: otid,
            transactionId: tid)
    }
}
