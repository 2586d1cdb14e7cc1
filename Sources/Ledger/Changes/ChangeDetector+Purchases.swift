import JSON

extension ChangeDetector {
    /// The transitions of one consumable or non-consumable purchase; consumables per currency,
    /// with the balance after.
    static func oneOff(
        _ old: ChangeSnapshot.OneOff?, _ new: ChangeSnapshot.OneOff, transactionId: String, balances: [String: Int64],
        catalog: Catalog, at now: Int64
    ) -> [ChangeDraft] {
        let product = catalog.product(for: new.productId, type: new.type == .consumable ? .consumable : .nonConsumable)
        func change(_ type: ChangeType, _ details: [String: JSONValue] = [:]) -> ChangeDraft {
            ChangeDraft(
                type: type, environment: new.environment, occurredAt: now, productId: new.productId,
                originalTransactionId: new.originalTransactionId, transactionId: transactionId,
                entitlementIds: product.entitlements.sorted(), details: details)
        }
        // A refund's details name Apple's share when it was prorated (what `amount` is a share of).
        let share: [String: JSONValue] =
            new.revocationPercentage.map {
                ["revocationPercentage": .number(String($0))]
            } ?? [:]
        func perCurrency(_ type: ChangeType, _ amounts: [String: Int64], _ extra: [String: JSONValue] = [:])
            -> [ChangeDraft]
        {
            amounts.keys.sorted().map { currency in
                change(
                    type,
                    extra.merging(
                        [
                            "currency": .string(currency), "amount": .number(String(amounts[currency]!)),
                            "balance": .number(String(balances[currency] ?? 0)),
                        ], uniquingKeysWith: { $1 }))
            }
        }
        let wasRevoked = old?.revoked ?? false
        switch (old == nil, wasRevoked, new.revoked) {
        case (true, _, false):
            return new.type == .consumable
                ? perCurrency(.consumablePurchase, new.grants) : [change(.nonConsumablePurchase)]
        case (true, _, true):
            // First seen already refunded: it never gave anything, but what a prorated refund
            // left the customer, which the balance now counts.
            guard new.type == .consumable else { return [] }
            return perCurrency(.consumablePurchase, new.credits.filter { $0.value > 0 })
        case (false, false, true):
            return new.type == .consumable ? perCurrency(.refund, new.takenBack, share) : [change(.refund, share)]
        case (false, true, false):
            // The reversal gives back exactly what the refund had taken.
            return new.type == .consumable
                ? perCurrency(.refundReversed, old!.takenBack) : [change(.refundReversed)]
        case (false, true, true) where new.type == .consumable && new.takenBack != old!.takenBack:
            // Apple re-signed the refund with another share: announce the difference, so the
            // amounts a listener adds up still match the balance.
            var taken: [String: Int64] = [:]
            var given: [String: Int64] = [:]
            for (currency, amount) in new.takenBack {
                let delta = amount - (old!.takenBack[currency] ?? 0)
                if delta > 0 { taken[currency] = delta } else if delta < 0 { given[currency] = -delta }
            }
            return perCurrency(.refund, taken, share) + perCurrency(.refundReversed, given)
        default:
            return []
        }
    }
}
