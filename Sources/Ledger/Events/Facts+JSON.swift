import JSON

extension Transaction {
    /// Writes the fields (Apple's names) into an open object.
    public func writeFields(to w: inout JSONWriter) {
        w.field("transactionId", transactionId)
        w.field("originalTransactionId", originalTransactionId)
        w.field("productId", productId)
        w.field("bundleId", bundleId)
        w.field("type", type)
        w.field("purchaseDate", purchaseDate)
        w.field("originalPurchaseDate", originalPurchaseDate)
        w.field("expiresDate", expiresDate)
        w.field("quantity", quantity)
        w.field("inAppOwnershipType", inAppOwnershipType)
        w.field("signedDate", signedDate)
        w.field("revocationDate", revocationDate)
        w.field("revocationReason", revocationReason)
        w.field("revocationType", revocationType)
        // Only when present (like every optional field): events recorded before it existed
        // keep their bytes, and read back as nil, a full refund, which is what they meant.
        w.field("revocationPercentage", revocationPercentage)
        w.field("isUpgraded", isUpgraded)
        w.field("offerType", offerType)
        w.field("offerDiscountType", offerDiscountType)
        w.field("offerIdentifier", offerIdentifier)
        w.field("environment", environment)
        w.field("appAccountToken", appAccountToken)
        w.field("webOrderLineItemId", webOrderLineItemId)
        w.field("transactionReason", transactionReason)
        w.field("price", price)
        w.field("currency", currency)
        w.field("storefront", storefront)
        w.field("subscriptionGroupIdentifier", subscriptionGroupIdentifier)
        // Only when present: events recorded before Apple sent it keep their bytes.
        w.field("appTransactionId", appTransactionId)
        w.field("previousOriginalTransactionId", previousOriginalTransactionId)
        // A commitment plan's fields, flat (events are flat objects) under Apple's names; only
        // when present, so every other transaction keeps its bytes.
        w.field("billingPlanType", billingPlanType)
        w.field("billingPeriodNumber", commitment?.billingPeriodNumber)
        w.field("totalBillingPeriods", commitment?.totalBillingPeriods)
        w.field("commitmentExpiresDate", commitment?.commitmentExpiresDate)
        w.field("commitmentPrice", commitment?.commitmentPrice)
    }

    init(fields f: inout Fields) throws(EventDecodingError) {
        self.init(
            transactionId: try f.string(.transactionId), originalTransactionId: try f.string(.originalTransactionId),
            productId: try f.string(.productId), bundleId: try f.string(.bundleId), type: try f.string(.type),
            purchaseDate: try f.int(.purchaseDate), originalPurchaseDate: f.optionalInt(.originalPurchaseDate),
            expiresDate: f.optionalInt(.expiresDate), quantity: f.optionalInt(.quantity) ?? 1,
            inAppOwnershipType: f.optionalString(.inAppOwnershipType) ?? "PURCHASED",
            signedDate: try f.int(.signedDate), revocationDate: f.optionalInt(.revocationDate),
            revocationReason: f.optionalInt(.revocationReason), revocationType: f.optionalString(.revocationType),
            revocationPercentage: f.optionalInt(.revocationPercentage),
            isUpgraded: f.optionalBool(.isUpgraded) ?? false, offerType: f.optionalInt(.offerType),
            offerDiscountType: f.optionalString(.offerDiscountType),
            offerIdentifier: f.optionalString(.offerIdentifier), environment: try f.string(.environment),
            appAccountToken: f.optionalString(.appAccountToken),
            webOrderLineItemId: f.optionalString(.webOrderLineItemId),
            transactionReason: f.optionalString(.transactionReason), price: f.optionalInt(.price),
            currency: f.optionalString(.currency), storefront: f.optionalString(.storefront),
            subscriptionGroupIdentifier: f.optionalString(.subscriptionGroupIdentifier),
            appTransactionId: f.optionalString(.appTransactionId),
            previousOriginalTransactionId: f.optionalString(.previousOriginalTransactionId))
        billingPlanType = f.optionalString(.billingPlanType)
        let commitment = Commitment(
            billingPeriodNumber: f.optionalInt(.billingPeriodNumber),
            totalBillingPeriods: f.optionalInt(.totalBillingPeriods),
            commitmentExpiresDate: f.optionalInt(.commitmentExpiresDate),
            commitmentPrice: f.optionalInt(.commitmentPrice))
        if commitment != Commitment() { self.commitment = commitment }
    }
}

extension RenewalInfo {
    /// Writes the fields (Apple's names) into an open object.
    public func writeFields(to w: inout JSONWriter) {
        w.field("originalTransactionId", originalTransactionId)
        w.field("productId", productId)
        w.field("autoRenewProductId", autoRenewProductId)
        w.field("autoRenewStatus", autoRenewStatus)
        w.field("isInBillingRetryPeriod", isInBillingRetryPeriod)
        w.field("gracePeriodExpiresDate", gracePeriodExpiresDate)
        w.field("expirationIntent", expirationIntent)
        w.field("signedDate", signedDate)
        w.field("environment", environment)
        w.field("renewalDate", renewalDate)
        w.field("offerType", offerType)
        w.field("priceIncreaseStatus", priceIncreaseStatus)
        w.field("recentSubscriptionStartDate", recentSubscriptionStartDate)
        w.field("renewalBillingPlanType", renewalBillingPlanType)
        w.field("commitmentAutoRenewStatus", commitmentRenewal?.commitmentAutoRenewStatus)
        w.field("commitmentAutoRenewProductId", commitmentRenewal?.commitmentAutoRenewProductId)
        w.field("commitmentRenewalBillingPlanType", commitmentRenewal?.commitmentRenewalBillingPlanType)
        w.field("commitmentRenewalDate", commitmentRenewal?.commitmentRenewalDate)
        w.field("commitmentRenewalPrice", commitmentRenewal?.commitmentRenewalPrice)
        // API 1.12–1.18's fields, only when present: renewal infos recorded before keep their bytes.
        w.field("renewalPrice", renewalPrice)
        w.field("currency", currency)
        w.field("offerDiscountType", offerDiscountType)
        w.field("offerPeriod", offerPeriod)
        w.field("offerIdentifier", offerIdentifier)
        // Events are flat objects of scalars: the list is stored as the text of a JSON array of
        // strings, which holds any id Apple may send (no separator character to reserve) and
        // keeps Apple's best-first order; SQL reads it with `::jsonb`.
        w.field("eligibleWinBackOfferIds", eligibleWinBackOfferIds.map(RenewalInfo.jsonText))
        w.field("appAccountToken", appAccountToken)
        w.field("appTransactionId", appTransactionId)
    }

    /// `["a","b"]`: the stored form of `eligibleWinBackOfferIds`.
    static func jsonText(_ ids: [String]) -> String {
        var w = JSONWriter(capacity: 64)
        w.beginArray()
        for id in ids { w.string(id) }
        w.endArray()
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// The ids of a stored `eligibleWinBackOfferIds` (nil when it is not an array of strings).
    static func ids(fromJSONText text: String) -> [String]? {
        guard let value = try? JSONValue.parse(Array(text.utf8)), case .array(let items) = value else { return nil }
        var ids: [String] = []
        for item in items {
            guard case .string(let id) = item else { return nil }
            ids.append(id)
        }
        return ids
    }

    init(fields f: inout Fields) throws(EventDecodingError) {
        self.init(
            originalTransactionId: try f.string(.originalTransactionId), productId: f.optionalString(.productId),
            autoRenewProductId: f.optionalString(.autoRenewProductId), autoRenewStatus: f.optionalInt(.autoRenewStatus),
            isInBillingRetryPeriod: f.optionalBool(.isInBillingRetryPeriod),
            gracePeriodExpiresDate: f.optionalInt(.gracePeriodExpiresDate),
            expirationIntent: f.optionalInt(.expirationIntent), signedDate: try f.int(.signedDate),
            environment: try f.string(.environment), renewalDate: f.optionalInt(.renewalDate),
            offerType: f.optionalInt(.offerType), priceIncreaseStatus: f.optionalInt(.priceIncreaseStatus),
            recentSubscriptionStartDate: f.optionalInt(.recentSubscriptionStartDate))
        renewalBillingPlanType = f.optionalString(.renewalBillingPlanType)
        let renewal = CommitmentRenewal(
            commitmentAutoRenewStatus: f.optionalInt(.commitmentAutoRenewStatus),
            commitmentAutoRenewProductId: f.optionalString(.commitmentAutoRenewProductId),
            commitmentRenewalBillingPlanType: f.optionalString(.commitmentRenewalBillingPlanType),
            commitmentRenewalDate: f.optionalInt(.commitmentRenewalDate),
            commitmentRenewalPrice: f.optionalInt(.commitmentRenewalPrice))
        if renewal != CommitmentRenewal() { commitmentRenewal = renewal }
        renewalPrice = f.optionalInt(.renewalPrice)
        currency = f.optionalString(.currency)
        offerDiscountType = f.optionalString(.offerDiscountType)
        offerPeriod = f.optionalString(.offerPeriod)
        offerIdentifier = f.optionalString(.offerIdentifier)
        eligibleWinBackOfferIds = f.optionalString(.eligibleWinBackOfferIds).flatMap(RenewalInfo.ids(fromJSONText:))
        appAccountToken = f.optionalString(.appAccountToken)
        appTransactionId = f.optionalString(.appTransactionId)
    }
}

extension NotificationFact {
    /// Writes the fields (Apple's names) into an open object.
    public func writeFields(to w: inout JSONWriter) {
        w.field("notificationUUID", notificationUUID)
        w.field("notificationType", notificationType)
        w.field("subtype", subtype)
        w.field("signedDate", signedDate)
        w.field("environment", environment)
        w.field("originalTransactionId", originalTransactionId)
        w.field("transactionId", transactionId)
        w.field("appTransactionId", appTransactionId)
    }

    init(fields f: inout Fields) throws(EventDecodingError) {
        self.init(
            notificationUUID: try f.string(.notificationUUID), notificationType: try f.string(.notificationType),
            subtype: f.optionalString(.subtype), signedDate: try f.int(.signedDate),
            environment: f.optionalString(.environment),
            originalTransactionId: f.optionalString(.originalTransactionId),
            transactionId: f.optionalString(.transactionId), appTransactionId: f.optionalString(.appTransactionId))
    }
}
