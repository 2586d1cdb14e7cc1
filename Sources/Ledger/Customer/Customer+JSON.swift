import JSON

extension Customer {
    /// The docs/api.md §2 document. Keys of `entitlements` and `balances` are sorted, so equal
    /// documents are equal bytes (cacheable, ETag-able).
    public func jsonBytes() -> [UInt8] {
        var w = JSONWriter(capacity: 256 + 256 * (entitlements.count + subscriptions.count + nonConsumables.count))
        write(to: &w)
        return w.bytes
    }

    /// Writes the document as one value (e.g. inside the POST /v1/purchases answer).
    public func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("userId")
        w.string(userId)
        w.key("entitlements")
        w.beginObject()
        for name in entitlements.keys.sorted() {
            let e = entitlements[name]!
            w.key(name)
            w.beginObject()
            w.key("active")
            w.bool(e.active)
            w.key("expiresAt")
            w.timestampOrNull(e.expiresAt)
            w.key("productId")
            w.stringOrNull(e.productId)
            w.key("source")
            w.string(e.source.rawValue)
            w.key("originalTransactionId")
            w.stringOrNull(e.originalTransactionId)
            w.key("willRenew")
            w.bool(e.willRenew)
            w.key("inGracePeriod")
            w.bool(e.inGracePeriod)
            if let grantId = e.grantId {  // only promotional entitlements carry it
                w.key("grantId")
                w.string(grantId)
            }
            w.endObject()
        }
        w.endObject()
        w.key("subscriptions")
        w.beginArray()
        for s in subscriptions { s.write(to: &w) }
        w.endArray()
        w.key("nonConsumables")
        w.beginArray()
        for n in nonConsumables {
            w.beginObject()
            w.key("productId")
            w.string(n.productId)
            w.key("transactionId")
            w.string(n.transactionId)
            w.key("purchasedAt")
            w.timestampOrNull(n.purchasedAt)
            w.key("revokedAt")
            w.timestampOrNull(n.revokedAt)
            w.key("ownership")
            w.string(n.ownership)
            // Only when Apple sent one: documents of older purchases keep their bytes.
            w.field("appTransactionId", n.appTransactionId)
            w.endObject()
        }
        w.endArray()
        w.key("balances")
        w.beginObject()
        for currency in balances.keys.sorted() {
            w.key(currency)
            w.int(balances[currency]!)
        }
        w.endObject()
        // Only when there is one: documents of everyone else keep their bytes.
        if !sameAppleAccountAs.isEmpty {
            w.key("sameAppleAccountAs")
            w.beginArray()
            for user in sameAppleAccountAs { w.string(user) }
            w.endArray()
        }
        if let consentRescindedAt {
            w.key("consentRescindedAt")
            w.timestampOrNull(consentRescindedAt)
        }
        w.key("version")
        w.int(version)
        w.endObject()
    }
}

extension SubscriptionView {
    /// One element of `subscriptions`.
    public func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("originalTransactionId")
        w.string(originalTransactionId)
        w.key("productId")
        w.string(productId)
        w.key("status")
        w.string(status.rawValue)
        w.key("expiresAt")
        w.timestampOrNull(expiresAt)
        w.key("gracePeriodExpiresAt")
        w.timestampOrNull(gracePeriodExpiresAt)
        w.key("autoRenew")
        w.bool(autoRenew)
        w.key("autoRenewProductId")
        w.stringOrNull(autoRenewProductId)
        w.key("environment")
        w.string(environment)
        w.key("ownership")
        w.string(ownership)
        w.key("revokedAt")
        w.timestampOrNull(revokedAt)
        w.key("isTrial")
        w.bool(isTrial)
        w.key("offerType")
        w.intOrNull(offerType)
        w.key("isIntroductoryOffer")
        w.bool(isIntroductoryOffer)
        // Only when Apple sent one: documents of older purchases keep their bytes.
        w.field("appTransactionId", appTransactionId)
        w.field("previousOriginalTransactionId", previousOriginalTransactionId)
        // Always there (api.md §8): null for every plan but a monthly one with a commitment.
        w.key("commitment")
        if let commitment {
            w.beginObject()
            w.key("period")
            w.intOrNull(commitment.period)
            w.key("periods")
            w.intOrNull(commitment.periods)
            w.key("expiresAt")
            w.timestampOrNull(commitment.expiresAt)
            w.key("willRenew")
            w.bool(commitment.willRenew)
            w.key("price")
            w.intOrNull(commitment.price)
            w.endObject()
        } else {
            w.null()
        }
        // Always there (api.md §8): null until a renewal info of the chain was recorded.
        w.key("renewal")
        if let renewal {
            renewal.write(to: &w)
        } else {
            w.null()
        }
        w.endObject()
    }
}

extension RenewalTerms {
    /// The subscription's `renewal` object: every key always there, null when Apple left it out.
    func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("renewalPrice")
        w.intOrNull(renewalPrice)
        w.key("currency")
        w.stringOrNull(currency)
        w.key("offerType")
        w.intOrNull(offerType)
        w.key("offerDiscountType")
        w.stringOrNull(offerDiscountType)
        w.key("offerPeriod")
        w.stringOrNull(offerPeriod)
        w.key("offerIdentifier")
        w.stringOrNull(offerIdentifier)
        w.key("eligibleWinBackOfferIds")
        w.beginArray()
        for id in eligibleWinBackOfferIds { w.string(id) }
        w.endArray()
        w.key("appAccountToken")
        w.stringOrNull(appAccountToken)
        w.endObject()
    }
}
