/// Every field name any event's data uses. Decoding looks names up here once per key, then
/// reads values by index: no dictionary per event.
enum EventField: Int, CaseIterable {
    // Transaction
    case transactionId, originalTransactionId, productId, bundleId, type, purchaseDate, originalPurchaseDate
    case expiresDate, quantity, inAppOwnershipType, signedDate, revocationDate, revocationReason, revocationType
    case isUpgraded, offerType, offerDiscountType, offerIdentifier, environment, appAccountToken
    case webOrderLineItemId, transactionReason, price, currency, storefront, subscriptionGroupIdentifier
    // RenewalInfo
    case autoRenewProductId, autoRenewStatus, isInBillingRetryPeriod, gracePeriodExpiresDate, expirationIntent
    case renewalDate, priceIncreaseStatus, recentSubscriptionStartDate
    // NotificationFact
    case notificationUUID, notificationType, subtype
    // user stream
    case userId, from, to, at, amount, idempotencyKey, reason, balanceAfter, entitlement, expiresAt

    var name: String { String(describing: self) }

    static let count = allCases.count

    /// Open-addressing table from FNV-1a of the name's bytes to the field.
    private static let table: [(hash: UInt64, field: EventField?)] = {
        var slots = [(hash: UInt64, field: EventField?)](repeating: (0, nil), count: 256)
        for field in allCases {
            let h = hash(Array(field.name.utf8))
            var i = Int(h & 255)
            while slots[i].field != nil { i = (i + 1) & 255 }
            slots[i] = (h, field)
        }
        return slots
    }()

    private static let names: [[UInt8]] = allCases.map { Array($0.name.utf8) }

    @inline(__always) static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    /// The field named by `bytes`, or nil for a name no event uses (ignored: tolerant reading).
    static func lookup(_ bytes: UnsafeBufferPointer<UInt8>) -> EventField? {
        let h = hash(bytes)
        var i = Int(h & 255)
        while let field = table[i].field {
            if table[i].hash == h, equal(names[field.rawValue], bytes) { return field }
            i = (i + 1) & 255
        }
        return nil
    }

    @inline(__always) private static func equal(_ name: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard name.count == bytes.count else { return false }
        return name.withUnsafeBufferPointer { n in
            for k in 0..<n.count where n[k] != bytes[k] { return false }
            return true
        }
    }

    static func lookup(_ name: String) -> EventField? {
        var name = name
        return name.withUTF8 { lookup($0) }
    }
}

/// A scalar value of an event's flat data object.
enum EventValue {
    case string(String)
    case int(Int64)
    case bool(Bool)
    case null
}
