import AppStore
import Infrastructure
import Ledger

/// Turns verified Apple payloads into the domain's fact values. A payload that verified but
/// lacks what the ledger needs (ids, dates) is refused as `malformed` before anything is stored.
package enum FactMapping {
    package static func transaction(_ t: JWSTransaction) throws(ServiceError) -> Transaction {
        guard let transactionId = nonEmpty(t.transactionId),
            let originalTransactionId = nonEmpty(t.originalTransactionId),
            let productId = nonEmpty(t.productId), let purchaseDate = t.purchaseDate, let signedDate = t.signedDate
        else {
            throw .verificationFailed(
                VerificationError(
                    .malformed,
                    "transaction lacks transactionId, originalTransactionId, productId, purchaseDate or signedDate"))
        }
        var fact = Transaction(
            transactionId: transactionId, originalTransactionId: originalTransactionId, productId: productId,
            bundleId: t.bundleId ?? "", type: t.type ?? "", purchaseDate: purchaseDate,
            originalPurchaseDate: t.originalPurchaseDate, expiresDate: t.expiresDate,
            quantity: Int64(max(1, t.quantity ?? 1)), inAppOwnershipType: t.inAppOwnershipType ?? "PURCHASED",
            signedDate: signedDate, revocationDate: t.revocationDate,
            revocationReason: t.revocationReason.map(Int64.init),
            revocationType: t.revocationType, revocationPercentage: t.revocationPercentage.map(Int64.init),
            isUpgraded: t.isUpgraded ?? false, offerType: t.offerType.map(Int64.init),
            offerDiscountType: t.offerDiscountType, offerIdentifier: t.offerIdentifier,
            environment: t.environment ?? "Production", appAccountToken: t.appAccountToken,
            webOrderLineItemId: t.webOrderLineItemId, transactionReason: t.transactionReason, price: t.price,
            currency: t.currency, storefront: t.storefront, subscriptionGroupIdentifier: t.subscriptionGroupIdentifier,
            appTransactionId: nonEmpty(t.appTransactionId),
            previousOriginalTransactionId: nonEmpty(t.previousOriginalTransactionId))
        fact.billingPlanType = nonEmpty(t.billingPlanType)
        if let info = t.commitmentInfo {
            fact.commitment = Commitment(
                billingPeriodNumber: info["billingPeriodNumber"]?.int64Value,
                totalBillingPeriods: info["totalBillingPeriods"]?.int64Value,
                commitmentExpiresDate: info["commitmentExpiresDate"]?.int64Value,
                commitmentPrice: info["commitmentPrice"]?.int64Value)
        }
        return fact
    }

    package static func renewalInfo(_ r: JWSRenewalInfo) throws(ServiceError) -> RenewalInfo {
        guard let originalTransactionId = nonEmpty(r.originalTransactionId), let signedDate = r.signedDate else {
            throw .verificationFailed(
                VerificationError(.malformed, "renewal info lacks originalTransactionId or signedDate"))
        }
        var fact = RenewalInfo(
            originalTransactionId: originalTransactionId, productId: r.productId,
            autoRenewProductId: r.autoRenewProductId,
            autoRenewStatus: r.autoRenewStatus.map(Int64.init), isInBillingRetryPeriod: r.isInBillingRetryPeriod,
            gracePeriodExpiresDate: r.gracePeriodExpiresDate, expirationIntent: r.expirationIntent.map(Int64.init),
            signedDate: signedDate, environment: r.environment ?? "Production", renewalDate: r.renewalDate,
            offerType: r.offerType.map(Int64.init), priceIncreaseStatus: r.priceIncreaseStatus.map(Int64.init),
            recentSubscriptionStartDate: r.recentSubscriptionStartDate)
        fact.renewalBillingPlanType = nonEmpty(r.renewalBillingPlanType)
        fact.renewalPrice = r.renewalPrice
        fact.currency = nonEmpty(r.currency)
        fact.offerDiscountType = nonEmpty(r.offerDiscountType)
        fact.offerPeriod = nonEmpty(r.offerPeriod)
        fact.offerIdentifier = nonEmpty(r.offerIdentifier)
        fact.eligibleWinBackOfferIds = r.eligibleWinBackOfferIds
        fact.appAccountToken = nonEmpty(r.appAccountToken)
        fact.appTransactionId = nonEmpty(r.appTransactionId)
        if let info = r.commitmentInfo {
            fact.commitmentRenewal = CommitmentRenewal(
                commitmentAutoRenewStatus: info["commitmentAutoRenewStatus"]?.int64Value,
                commitmentAutoRenewProductId: info["commitmentAutoRenewProductId"]?.stringValue,
                commitmentRenewalBillingPlanType: info["commitmentRenewalBillingPlanType"]?.stringValue,
                commitmentRenewalDate: info["commitmentRenewalDate"]?.int64Value,
                commitmentRenewalPrice: info["commitmentRenewalPrice"]?.int64Value)
        }
        return fact
    }

    package static func notification(
        _ n: NotificationPayload, transaction: Transaction?, renewal: RenewalInfo?,
        appTransaction: AppTransaction? = nil
    ) throws(ServiceError) -> NotificationFact {
        guard let uuid = nonEmpty(n.notificationUUID), let type = nonEmpty(n.notificationType),
            let signedDate = n.signedDate
        else {
            throw .verificationFailed(
                VerificationError(.malformed, "notification lacks notificationUUID, notificationType or signedDate"))
        }
        return NotificationFact(
            notificationUUID: uuid, notificationType: type, subtype: n.subtype, signedDate: signedDate,
            environment: n.data?.environment ?? n.summary?.environment ?? n.appData?.environment,
            originalTransactionId: transaction?.originalTransactionId ?? renewal?.originalTransactionId,
            transactionId: transaction?.transactionId, appTransactionId: nonEmpty(appTransaction?.appTransactionId))
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }
}
