/// What each product grants (config `products`, docs/api.md §1).
public struct Catalog: Sendable, Hashable {
    public var products: [String: Product]

    public init(products: [String: Product] = [:]) { self.products = products }

    /// The product a transaction is for. A product missing from the config still counts: it
    /// grants the entitlement named by its id, or (consumable) credits the balance named by its
    /// id; its type comes from the transaction's `type`.
    public func product(for productId: String, type: ProductType) -> Product {
        if let known = products[productId] {
            if known.type == .consumable && known.grants.isEmpty {
                return Product(type: .consumable, entitlements: known.entitlements, grants: [productId: 1])
            }
            return known
        }
        if type == .consumable { return Product(type: .consumable, grants: [productId: 1]) }
        return Product(type: type, entitlements: [productId])
    }

    /// The product of a transaction whose Apple `type` is `transactionType`.
    public func product(for productId: String, transactionType: String) -> Product {
        product(for: productId, type: ProductType(transactionType: transactionType))
    }

    public func product(for transaction: Transaction) -> Product {
        product(for: transaction.productId, type: transaction.productType)
    }
}

/// One configured product.
public struct Product: Sendable, Hashable {
    public var type: ProductType
    public var entitlements: [String]
    /// Balance credits per unit bought (consumables): currency → amount.
    public var grants: [String: Int64]
    /// How long a non-renewing purchase gives access; purchases of the same product stack.
    /// nil: until revoked.
    public var duration: ISODuration?
    /// A subscription's billing period, when the config declares it (MRR); nil: the analytics
    /// snap each transaction's length to the nearest standard period.
    public var period: BillingPeriod?
    /// A subscription's subscription group, when the config declares it (api.md §8: eligibility
    /// for introductory offers is per group); nil: the `subscriptionGroupIdentifier` Apple
    /// recorded with the product's transactions.
    public var group: String? = nil

    public init(
        type: ProductType, entitlements: [String] = [], grants: [String: Int64] = [:], duration: ISODuration? = nil,
        period: BillingPeriod? = nil, group: String? = nil
    ) {
        self.group = group
        self.type = type
        self.entitlements = entitlements
        self.grants = grants
        self.duration = duration
        self.period = period
    }
}

/// Product kinds; raw values are the config file's spelling.
public enum ProductType: String, Sendable, Hashable, CaseIterable {
    case consumable = "consumable"
    case nonConsumable = "non-consumable"
    case subscription = "subscription"
    case nonRenewing = "non-renewing"

    /// From Apple's transaction `type` (the one place its spellings are read); an unknown value
    /// counts as a non-consumable (owned until revoked).
    public init(transactionType: String) {
        switch transactionType {
        case "Auto-Renewable Subscription": self = .subscription
        case "Consumable": self = .consumable
        case "Non-Renewing Subscription": self = .nonRenewing
        default: self = .nonConsumable
        }
    }
}

extension Transaction {
    /// The kind of product `type` names (the raw `type` is kept as Apple sent it).
    public var productType: ProductType { ProductType(transactionType: type) }
}
