import Ledger

extension Configuration {
    /// The ledger's catalog: every configured app's products (product ids are globally unique
    /// in the App Store, so one map serves all apps).
    package var catalog: Catalog {
        var products: [String: Ledger.Product] = [:]
        for app in apps {
            for (productId, product) in app.products {
                let type: ProductType =
                    switch product.kind {
                    case .consumable: .consumable
                    case .nonConsumable: .nonConsumable
                    case .subscription: .subscription
                    case .nonRenewing: .nonRenewing
                    }
                products[productId] = Ledger.Product(
                    type: type, entitlements: product.entitlements, grants: product.grants,
                    duration: product.duration.flatMap(ISODuration.init), period: product.period,
                    group: product.group)
            }
        }
        return Catalog(products: products)
    }

    package var ledgerTransferPolicy: Ledger.TransferPolicy {
        transferPolicy == .keep ? .keep : .transfer
    }
}
