import AppStore
import JSON

/// `testkit receipt`: a StoreKit 1 app receipt for the test store's app, in Apple's receipt
/// format (`AppReceiptContents`), built from the store's state; no I/O.
enum TestkitReceipt {
    static let appVersion = "1.0"

    /// Buys `products` (each a new chain, ids from the store's counter) and returns the receipt of
    /// `user`'s device: every chain that user bought with `testkit receipt`, each with every
    /// period since (renewals minted by `testkit notify`), a refunded one with its cancellation
    /// date. Without a user (`--print`), the receipt holds only what was just bought.
    /// Apple's receipts are dated to the second: so are the purchases minted here.
    static func mint(
        products: [(id: String, type: TestkitProductType)], user: String?, bundleId: String, now: Int64,
        state: inout TestkitState
    ) throws(TestkitError) -> (contents: AppReceiptContents, new: [String]) {
        let second = now - now % 1000
        var new: [String] = []
        for product in products {
            let payload = try TestkitMinter.purchase(
                TestkitPurchase(productId: product.id, type: product.type), bundleId: bundleId, now: second,
                state: &state)
            new.append(payload["transactionId"]?.stringValue ?? "")
        }
        var chains = new
        if let user {
            state.receiptChains[user, default: []].append(contentsOf: new)
            for chain in new { state.customers[chain] = user }
            chains = state.receiptChains[user] ?? []
        }
        guard !chains.isEmpty else {
            throw TestkitError("\(user ?? "nobody") bought nothing with `testkit receipt` yet: pass --product")
        }
        let wanted = Set(chains)
        let purchases = state.transactions.filter { wanted.contains($0["originalTransactionId"]?.stringValue ?? "") }
            .map(purchase)
        return (
            AppReceiptContents(
                bundleId: bundleId, appVersion: appVersion, originalAppVersion: appVersion, creationDate: second,
                purchases: purchases), new
        )
    }

    /// One minted transaction payload as an in-app purchase receipt.
    static func purchase(_ t: [String: JSONValue]) -> AppReceiptContents.Purchase {
        let id = t["transactionId"]?.stringValue ?? ""
        let bought = t["purchaseDate"]?.int64Value ?? 0
        return AppReceiptContents.Purchase(
            quantity: Int(t["quantity"]?.int64Value ?? 1), productId: t["productId"]?.stringValue ?? "",
            transactionId: id, originalTransactionId: t["originalTransactionId"]?.stringValue ?? id,
            purchaseDate: bought, originalPurchaseDate: t["originalPurchaseDate"]?.int64Value ?? bought,
            expiresDate: t["expiresDate"]?.int64Value,
            webOrderLineItemId: t["webOrderLineItemId"]?.stringValue.flatMap { Int64($0) },
            cancellationDate: t["revocationDate"]?.int64Value,
            isInIntroOfferPeriod: t["expiresDate"] == nil ? nil : false)
    }

    /// What the store knows of a chain's renewal, for the stand-in's `pending_renewal_info`.
    static func renewal(_ info: [String: JSONValue]) -> VerifyReceiptStandIn.Renewal {
        VerifyReceiptStandIn.Renewal(
            autoRenewProductId: info["autoRenewProductId"]?.stringValue,
            autoRenewStatus: (info["autoRenewStatus"]?.int64Value ?? 1) == 1,
            expirationIntent: info["expirationIntent"]?.int64Value.map { Int($0) },
            isInBillingRetryPeriod: info["isInBillingRetryPeriod"]?.boolValue,
            gracePeriodExpiresDate: info["gracePeriodExpiresDate"]?.int64Value)
    }
}

extension TestCertificateAuthority {
    /// Signs receipts with the leaf, carrying the intermediate as Apple's receipts carry theirs.
    func receiptSigner() throws(VerificationSetupError) -> AppReceiptSigner {
        try AppReceiptSigner(privateKeyPEM: leafKeyPEM, certificateDER: leafDER, chainDER: [intermediateDER])
    }
}
