extension ChainState {
    /// The current period: the non-upgraded transaction with the latest expiresDate (a
    /// transaction without one, e.g. non-renewing, counts as open-ended); ties by purchaseDate,
    /// then transactionId. Upgraded transactions grant nothing and never count.
    public var currentTransaction: Transaction? {
        // The versions and the index of the best so far: compared in place, copied once.
        var best: (versions: [Transaction], index: Int)?
        for versions in transactionVersions.values {
            let index = Self.newestIndex(versions)
            if versions[index].isUpgraded { continue }
            guard let (bestVersions, bestIndex) = best else {
                best = (versions, index)
                continue
            }
            let a = (versions[index].expiresDate ?? .max, versions[index].purchaseDate)
            let b = (bestVersions[bestIndex].expiresDate ?? .max, bestVersions[bestIndex].purchaseDate)
            if a > b || (a == b && versions[index].transactionId > bestVersions[bestIndex].transactionId) {
                best = (versions, index)
            }
        }
        return best.map { $0.versions[$0.index] }
    }

    /// The subscription judged at `now` (ms): nil when no non-upgraded transaction is known.
    ///
    /// - revoked: the current period carries `revocationDate` (a refund of an older period
    ///   does not matter: it is not the current one);
    /// - active: now < expiresDate;
    /// - in grace: period over, now < gracePeriodExpiresDate of the newest renewal info;
    /// - in billing retry: period over, `isInBillingRetryPeriod`, no grace left;
    /// - expired otherwise.
    /// Renewal info signed before the current period began describes an older period: its
    /// grace and retry flags are ignored (a lost recovery renewal info must not hide a renewal).
    public func status(at now: Int64) -> ChainStatus? {
        guard let (current, renewal, renewalIsCurrent, grace) = judgedPeriod else { return nil }
        // Until Apple says otherwise, a new auto-renewable subscription renews (docs/domain.md); the
        // renewal info often arrives later, with the first notification.
        let renewsByDefault = current.productType == .subscription
        let status: SubscriptionStatus
        if current.revocationDate != nil {
            status = .revoked
        } else if let expires = current.expiresDate, now >= expires {
            if let grace, now < grace {
                status = .inGracePeriod
            } else if renewalIsCurrent, renewal?.isInBillingRetryPeriod == true {
                status = .inBillingRetry
            } else {
                status = .expired
            }
        } else {
            status = .active
        }
        return ChainStatus(
            status: status, productId: current.productId, transactionType: current.type,
            currentTransactionId: current.transactionId, purchasedAt: current.purchaseDate,
            expiresAt: current.expiresDate, gracePeriodExpiresAt: grace, revokedAt: current.revocationDate,
            autoRenew: renewal.map { $0.autoRenewStatus == 1 } ?? renewsByDefault,
            autoRenewProductId: renewal.map(\.autoRenewProductId) ?? (renewsByDefault ? current.productId : nil),
            environment: current.environment, ownership: current.inAppOwnershipType,
            offerType: current.offerType, offerDiscountType: current.offerDiscountType,
            appTransactionId: current.appTransactionId,
            // Apple names it on the migrated chain's first transaction, and may on later ones.
            previousOriginalTransactionId: current.previousOriginalTransactionId
                ?? transactionVersions[current.originalTransactionId]?.first?.previousOriginalTransactionId,
            commitment: current.isCommitmentPlan ? CommitmentStatus(current, renewal: renewal) : nil,
            renewal: renewal.map(RenewalTerms.init))
    }

    /// The next instant after `now` at which `status(at:)` may change with no new fact.
    /// Only the period's two ends count (the `expiresAt` and `gracePeriodExpiresAt` `status(at:)`
    /// would give): building the whole status again cost every render a second `ChainStatus`.
    public func nextChange(after now: Int64) -> Int64? {
        guard let (current, _, _, grace) = judgedPeriod else { return nil }
        var next: Int64?
        if let expires = current.expiresDate, expires > now { next = expires }
        if let grace, grace > now { next = min(next ?? grace, grace) }
        return next
    }

    /// What `status(at:)` judges from: the current period, the newest renewal info, whether that
    /// info describes the current period, and the grace end that applies to it.
    private var judgedPeriod: (current: Transaction, renewal: RenewalInfo?, renewalIsCurrent: Bool, grace: Int64?)? {
        guard let current = currentTransaction else { return nil }
        let renewal = latestRenewalInfo
        let renewalIsCurrent = renewal.map { $0.signedDate >= current.purchaseDate } ?? false
        // Billing Grace Period does not apply to commitment plans (Apple's commitment life-cycle
        // guide): a failed monthly renewal is billing retry at once.
        let grace = renewalIsCurrent && !current.isCommitmentPlan ? renewal?.gracePeriodExpiresDate : nil
        return (current, renewal, renewalIsCurrent, grace)
    }
}
