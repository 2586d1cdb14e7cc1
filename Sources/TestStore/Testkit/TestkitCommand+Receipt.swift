import AppStore
import Arguments
import Foundation
import JSON

/// `testkit receipt`.
extension TestkitCommand {
    static func receipt(_ parsed: CommandLineArguments, _ load: @escaping TestkitConfiguration.Loader) throws -> Int32 {
        let printOnly = parsed.switches.contains("print")
        let user = try parsed.options["user"].map(validUser)
        guard printOnly || user != nil else { throw usageError("testkit receipt needs --user (or --print)") }
        let productIds = try (parsed.repeated["product"] ?? []).map(validProduct)
        guard user != nil || !productIds.isEmpty else {
            throw usageError(
                "testkit receipt --print without --user needs --product (a receipt of nothing is no receipt)")
        }
        let target = try destination(parsed, path: "/v1/purchases", printOnly: printOnly)
        let key = printOnly ? nil : try apiKey(parsed)

        let store = try store(parsed, load)
        let app = try store.app()
        let products = try productIds.map { id throws(CommandLineArguments.UsageError) in
            guard let type = app.products[id] else {
                throw usageError(
                    "product \(id) is not in \(store.configPath) (testkit receipt buys configured products only)")
            }
            return (id: id, type: type)
        }
        let signer = try store.authority().receiptSigner()
        let minted = try store.withStateLock {
            var state = try store.loadState()
            let minted = try TestkitReceipt.mint(
                products: products, user: user, bundleId: app.bundleId, now: nowMillis(), state: &state)
            try store.save(state)
            return minted
        }
        let receipt = signer.signedReceipt(minted.contents.der())
        let ids = minted.contents.purchases.map(\.transactionId).joined(separator: ", ")
        let bought = minted.new.isEmpty ? "" : "; new: " + minted.new.joined(separator: ", ")
        let note = "minted an app receipt of \(minted.contents.purchases.count) purchases (\(ids)\(bought))"
        if printOnly {
            print(receipt)
        } else {
            let body = JSONValue.object(["userId": .string(user!), "receipt": .string(receipt)]).serialized()
            try deliver(body, to: target!, key: key, minted: note)
        }
        TestkitCommand.printError("testkit: " + note)
        return 0
    }
}
