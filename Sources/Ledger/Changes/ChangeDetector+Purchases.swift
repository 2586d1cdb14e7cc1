import JSON

extension ChangeDetector {
    /// The transitions of one consumable or non-consumable purchase; consumables per currency,
    /// with the balance after.
    static func oneOff(
        _ old: ChangeSnapshot.OneOff?, _ new: ChangeSnapshot.OneOff, transactionId: String, balances: [String: Int64],
        catalog: Catalog, at now: Int64
    ) -> [ChangeDraft] {
        let product = catalog.product(
            for: new.productId, transactionType: new.type == .consumable ? "Consumable" : "Non-Consumable")
        func change(_ type: ChangeType, _ details: [String: JSONValue] = [:]) -> ChangeDraft {
            ChangeDraft(
                type: type, environment: new.environment, occurredAt: now, productId: new.productId,
                originalTransactionId: new.originalTransactionId, transactionId: transactionId,
                entitlementIds: product.entitlements.sorted(), details: details)
        }
        func perCurrency(_ type: ChangeType, _ amounts: [String: Int64]) -> [ChangeDraft] {
            amounts.keys.sorted().map { currency in
                change(
                    type,
                    [
                        "currency": .string(currency), "amount": .number(String(amounts[currency]!)),
                        "balance": .number(String(balances[currency] ?? 0)),
                    ])
            }
        }
        let wasRevoked = old?.revoked ?? false
        switch (old == nil, wasRevoked, new.revoked) {
        case (true, _, false):
            return new.type == .consumable
                ? perCurrency(.consumablePurchase, new.grants) : [change(.nonConsumablePurchase)]
        case (true, _, true):
            return []  // first seen already refunded: it never gave anything
        case (false, false, true):
            return new.type == .consumable ? perCurrency(.refund, new.grants) : [change(.refund)]
        case (false, true, false):
            return new.type == .consumable ? perCurrency(.refundReversed, new.grants) : [change(.refundReversed)]
        default:
            return []
        }
    }
}
