import JSON

extension ChangeDetector {
    /// The transitions of one subscription view (an auto-renewable chain, a non-renewing
    /// purchase) from `old` to `new`, judged at the same instant or at two instants.
    ///
    /// Facts arrive late and out of order, so a view may first be seen in any state; what is
    /// announced follows access, so that the changes a user saw, folded, say what the document
    /// says: first seen without access (restored long after it lapsed, refunded before anyone
    /// claimed it) announces nothing; a refund reversal or a billing issue says which status
    /// it left the subscription in.
    /// `replacing`: with no `old` view, the product of the upgraded transactions the chain held
    /// (their access already ended, see `vanished`); the new period is then the upgrade's.
    static func subscription(
        _ old: SubscriptionView?, _ new: SubscriptionView, replacing: String? = nil, running: Set<String>,
        catalog: Catalog, at now: Int64
    ) -> [ChangeDraft] {
        let product = catalog.product(for: new.productId, transactionType: new.transactionType)
        func change(_ type: ChangeType, _ details: [String: JSONValue] = [:]) -> ChangeDraft {
            ChangeDraft(
                type: type, environment: new.environment, occurredAt: now, productId: new.productId,
                originalTransactionId: new.originalTransactionId, transactionId: new.transactionId,
                entitlementIds: product.entitlements.sorted(), details: details)
        }
        let status: [String: JSONValue] = ["status": .string(new.status.rawValue)]
        guard let old else {
            guard new.status.hasAccess else { return [] }
            if let replacing {
                return [
                    replacing == new.productId
                        ? change(.renewal)
                        : change(.productChange, ["from": .string(replacing), "to": .string(new.productId)])
                ]
            }
            let first = change(product.type == .nonRenewing ? .nonRenewingPurchase : .initialPurchase)
            return new.status.isBillingIssue ? [first, change(.billingIssue, status)] : [first]
        }
        let samePeriod = old.transactionId == new.transactionId
        if new.status == .revoked { return old.status == .revoked && samePeriod ? [] : [change(.refund)] }
        // The refunded period given back; a later period on a refunded chain is a renewal.
        if old.status == .revoked && samePeriod { return [change(.refundReversed, status)] }

        var changes: [ChangeDraft] = []
        if !samePeriod {
            // A new period was paid for. One that ran out before it reached us gives nothing
            // to announce but the billing issue it may have ended in.
            if new.status.hasAccess {
                if old.productId != new.productId {
                    changes.append(
                        change(.productChange, ["from": .string(old.productId), "to": .string(new.productId)]))
                } else if old.status.isBillingIssue {
                    changes.append(change(.billingRecovered))
                } else {
                    changes.append(change(.renewal))
                }
            }
            if new.status.isBillingIssue && new.status != old.status { changes.append(change(.billingIssue, status)) }
            if old.status.hasAccess && !new.status.hasAccess { changes.append(change(.expiration, status)) }
        } else {
            // The same period, judged anew: a grace period began or ended, access ran out.
            if new.status.isBillingIssue && (!old.status.isBillingIssue || old.status != new.status) {
                changes.append(change(.billingIssue, status))
            } else if old.status.isBillingIssue && new.status == .active {
                changes.append(change(.billingRecovered))
            } else if !old.status.hasAccess && new.status.hasAccess {
                changes.append(change(.renewal))  // the period was extended (RENEWAL_EXTENDED)
            }
            // A non-renewing purchase bought while another of its product ran is laid after it:
            // the first one's end is not the end of access.
            let continued = product.type == .nonRenewing && running.contains(new.productId)
            if old.status.hasAccess && !new.status.hasAccess && !continued {
                changes.append(change(.expiration, status))
            }
        }
        // Auto-renew switched on a subscription that still runs; a lapsed one resubscribed
        // (a new period with auto-renew on again) is a renewal, not an uncancellation.
        if new.status != .expired {
            if old.autoRenew && !new.autoRenew { changes.append(change(.cancellation)) }
            if !old.autoRenew && new.autoRenew && old.status != .expired { changes.append(change(.uncancellation)) }
        }
        return changes
    }

    /// A view that is gone without a transfer: all its transactions are upgraded and the one
    /// that replaced them has not arrived yet. Access ended, until it does.
    static func vanished(_ old: SubscriptionView, catalog: Catalog, at now: Int64) -> [ChangeDraft] {
        guard old.status.hasAccess else { return [] }
        let product = catalog.product(for: old.productId, transactionType: old.transactionType)
        return [
            ChangeDraft(
                type: .expiration, environment: old.environment, occurredAt: now, productId: old.productId,
                originalTransactionId: old.originalTransactionId, transactionId: old.transactionId,
                entitlementIds: product.entitlements.sorted(),
                details: ["status": .string(SubscriptionStatus.expired.rawValue)])
        ]
    }

    /// The non-renewing products with a duration that still give access in `snapshot` (some
    /// period of theirs runs, or waits behind one that runs).
    static func runningStacks(_ snapshot: ChangeSnapshot, catalog: Catalog) -> Set<String> {
        var running: Set<String> = []
        for view in snapshot.subscriptions.values where view.status == .active {
            let product = catalog.product(for: view.productId, transactionType: view.transactionType)
            if product.type == .nonRenewing && product.duration != nil { running.insert(view.productId) }
        }
        return running
    }
}
