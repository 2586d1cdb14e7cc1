/// Every field name any event's data uses. Decoding looks names up here once per key, then
/// reads values by index: no dictionary per event.
enum EventField: Int, CaseIterable {
    // Transaction
    case transactionId, originalTransactionId, productId, bundleId, type, purchaseDate, originalPurchaseDate
    case expiresDate, quantity, inAppOwnershipType, signedDate, revocationDate, revocationReason, revocationType
    case revocationPercentage, isUpgraded, offerType, offerDiscountType, offerIdentifier, environment, appAccountToken
    case webOrderLineItemId, transactionReason, price, currency, storefront, subscriptionGroupIdentifier
    case appTransactionId, previousOriginalTransactionId
    // Commitment plans (API 1.21), flattened from Apple's `commitmentInfo` under Apple's names
    case billingPlanType, billingPeriodNumber, totalBillingPeriods, commitmentExpiresDate, commitmentPrice
    case renewalBillingPlanType, commitmentAutoRenewStatus, commitmentAutoRenewProductId
    case commitmentRenewalBillingPlanType, commitmentRenewalDate, commitmentRenewalPrice
    // RenewalInfo
    case autoRenewProductId, autoRenewStatus, isInBillingRetryPeriod, gracePeriodExpiresDate, expirationIntent
    case renewalDate, priceIncreaseStatus, recentSubscriptionStartDate
    case renewalPrice, offerPeriod, eligibleWinBackOfferIds
    // NotificationFact
    case notificationUUID, notificationType, subtype
    // user stream
    case userId, from, to, at, amount, idempotencyKey, reason, balanceAfter, entitlement, expiresAt
    case grantId, duration, minted, sharedWith, alias, target
    // Requests the service made to Apple (ConsumptionAnswer, RenewalExtension)
    case customerConsented, sampleContentProvided, deliveryStatus, consumptionPercentage, refundPreference
    case outcome, appleErrorCode, detail, attempt, extendByDays, extendReasonCode, requestIdentifier, effectiveDate
    // Requests Apple made to the service (RetentionAnswer)
    case userLocale, tenureMonths, ruleIndex, answer, messageIdentifier, alternateProductId

    var name: String { String(describing: self) }

    static let count = allCases.count

    /// Open-addressing table from `slot(_:)` of a name to the field (fields + 1; 0 = empty).
    /// The slot mixes only the length and three bytes (constant time: replay looks up about
    /// twenty keys per event); the full compare afterwards makes any collision harmless.
    private static let table: [UInt8] = {
        var slots = [UInt8](repeating: 0, count: 1024)
        for field in allCases {
            let name = Array(field.name.utf8)
            let h = name.withUnsafeBufferPointer { slot($0) }
            var i = h
            while slots[i] != 0 { i = (i + 1) & 1023 }
            slots[i] = UInt8(field.rawValue + 1)
        }
        return slots
    }()

    /// Every name's bytes, one after the other, and where each starts and ends.
    private static let nameBytes: [UInt8] = allCases.flatMap { Array($0.name.utf8) }
    private static let nameBounds: [Range<Int>] = {
        var bounds: [Range<Int>] = []
        var start = 0
        for field in allCases {
            bounds.append(start..<(start + field.name.utf8.count))
            start += field.name.utf8.count
        }
        return bounds
    }()

    @inline(__always) fileprivate static func slot(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        let n = bytes.count
        guard n > 0 else { return 0 }
        let mix =
            UInt32(n) &* 0x9E37_79B1 ^ UInt32(bytes[0]) &* 0x85EB_CA77
            ^ UInt32(bytes[n - 1]) &* 0xC2B2_AE3D ^ UInt32(bytes[n / 2]) &* 0x27D4_EB2F
        return Int((mix ^ (mix >> 15)) & 1023)
    }

    /// The field named by `bytes`, or nil for a name no event uses (ignored: tolerant reading).
    @inline(__always) static func lookup(_ bytes: UnsafeBufferPointer<UInt8>) -> EventField? {
        Lookup.shared.field(bytes)
    }

    /// The lookup's tables in memory of their own, never freed: a lookup through the arrays
    /// retained and released their buffers for every key (about twenty per event), and the two
    /// decoding threads of a replay contended for those shared reference counts.
    struct Lookup: @unchecked Sendable {
        let slots: UnsafePointer<UInt8>
        let names: UnsafePointer<UInt8>
        let bounds: UnsafePointer<Range<Int>>

        static let shared = Lookup()

        private init() {
            func pinned<T>(_ array: [T]) -> UnsafePointer<T> {
                let memory = UnsafeMutablePointer<T>.allocate(capacity: array.count)
                memory.initialize(from: array, count: array.count)
                return UnsafePointer(memory)
            }
            slots = pinned(EventField.table)
            names = pinned(EventField.nameBytes)
            bounds = pinned(EventField.nameBounds)
        }

        @inline(__always) func field(_ bytes: UnsafeBufferPointer<UInt8>) -> EventField? {
            var i = EventField.slot(bytes)
            while slots[i] != 0 {
                let index = Int(slots[i]) - 1
                let range = bounds[index]
                if range.count == bytes.count, Self.equal(names + range.lowerBound, bytes) {
                    return EventField(rawValue: index)
                }
                i = (i + 1) & 1023
            }
            return nil
        }

        @inline(__always) private static func equal(_ name: UnsafePointer<UInt8>, _ bytes: UnsafeBufferPointer<UInt8>)
            -> Bool
        {
            for k in 0..<bytes.count where name[k] != bytes[k] { return false }
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
