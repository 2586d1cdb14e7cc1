import Infrastructure
import Service
import TestStore

extension TestkitConfiguration {
    /// The test store's view of a config file read by the service's own loader, so a store's
    /// config.json passes exactly the checks `serve` makes of it.
    @Sendable static func load(path: String) throws -> TestkitConfiguration {
        let configuration = try Configuration.load(path: path)
        return TestkitConfiguration(
            apps: configuration.apps.map { app in
                TestkitConfiguration.App(
                    bundleId: app.bundleId, appAppleId: app.appAppleId, environments: app.environments,
                    sharedSecret: app.sharedSecret, products: app.products.mapValues { TestkitProductType($0.kind) },
                    serverAPI: app.serverAPI.map {
                        TestkitConfiguration.ServerAPI(
                            issuerId: $0.issuerId, keyId: $0.keyId, privateKeyPath: $0.privateKeyPath,
                            publicKeyPEM: $0.key.publicKeyPEM, localTestingURL: $0.localTestingURL)
                    })
            },
            verifyReceiptProduction: configuration.verifyReceipt.production,
            verifyReceiptSandbox: configuration.verifyReceipt.sandbox)
    }
}

extension TestkitProductType {
    /// The type a configured product is sold as.
    init(_ kind: Configuration.Product.Kind) {
        switch kind {
        case .subscription: self = .autoRenewable
        case .consumable: self = .consumable
        case .nonConsumable: self = .nonConsumable
        case .nonRenewing: self = .nonRenewing
        }
    }
}
