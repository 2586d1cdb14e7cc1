import AppStore
import Arguments
import Foundation
import JSON

/// `testkit purchase`.
extension TestkitCommand {
    static func purchase(_ parsed: CommandLineArguments, _ load: @escaping TestkitConfiguration.Loader) throws -> Int32
    {
        let printOnly = parsed.switches.contains("print")
        let appleOnly = try appleOnly(parsed)
        let user = try parsed.options["user"].map(validUser)
        guard printOnly || user != nil else { throw usageError("testkit purchase needs --user (or --print)") }
        guard let productId = try parsed.options["product"].map(validProduct) else {
            throw usageError("testkit purchase needs --product")
        }
        var type: TestkitProductType?
        if let word = parsed.options["type"] {
            guard let named = TestkitProductType(rawValue: word) else {
                let words = TestkitProductType.allCases.map(\.rawValue).joined(separator: ", ")
                throw usageError("--type must be one of \(words), got \"\(word)\"")
            }
            type = named
        }
        var expires: TestkitExpiry?
        if let text = parsed.options["expires"] { expires = try expiry(text) }
        var quantity = 1
        if let text = parsed.options["quantity"] {
            guard let number = Int(text), (1...100).contains(number) else {
                throw usageError("--quantity must be 1…100, got \"\(text)\"")
            }
            quantity = number
        }
        var token: String?
        if let text = parsed.options["app-account-token"] {
            guard let uuid = UUID(uuidString: text) else {
                throw usageError("--app-account-token must be a UUID, got \"\(text)\"")
            }
            token = uuid.uuidString.lowercased()
        }
        var commitment = false
        if let plan = parsed.options["billing-plan"] {
            guard ["monthly-commitment", "upfront"].contains(plan) else {
                throw usageError("--billing-plan must be monthly-commitment or upfront, got \"\(plan)\"")
            }
            commitment = plan == "monthly-commitment"
        }
        let target = try destination(
            parsed, path: "/v1/purchases", printOnly: printOnly || appleOnly,
            notPosting: appleOnly ? "--apple-only" : "--print")
        let key = printOnly || appleOnly ? nil : try apiKey(parsed)

        let store = try store(parsed, load)
        let app = try store.app()
        let configured = app.products[productId]
        guard let resolvedType = type ?? configured else {
            throw usageError("product \(productId) is not in \(store.configPath): pass --type")
        }
        if expires != nil && resolvedType != .autoRenewable {
            throw usageError(
                "--expires is only for auto-renewable subscriptions (\(productId) is \(resolvedType.rawValue))")
        }
        if commitment && resolvedType != .autoRenewable {
            throw usageError(
                "--billing-plan is only for auto-renewable subscriptions (\(productId) is \(resolvedType.rawValue))")
        }
        if quantity != 1 && resolvedType != .consumable {
            throw usageError("--quantity is only for consumables (\(productId) is \(resolvedType.rawValue))")
        }

        let signer = try store.authority().signer()
        let request = TestkitPurchase(
            productId: productId, type: resolvedType, expires: expires, quantity: quantity, appAccountToken: token,
            commitment: commitment)
        let payload = try store.withStateLock {
            var state = try store.loadState()
            let payload = try TestkitMinter.purchase(request, bundleId: app.bundleId, now: nowMillis(), state: &state)
            // Whose history `testkit apple` answers it in.
            if let user, let id = payload["transactionId"]?.stringValue { state.customers[id] = user }
            try store.save(state)
            return payload
        }
        let jws = signer.sign(payload: JSONValue.object(payload).serialized())
        let id = payload["transactionId"]?.stringValue ?? ""
        let until = payload["expiresDate"]?.int64Value.map { ", expires \(RFC3339.format($0))" } ?? ""
        let note =
            "minted transaction \(id) (\(productId), \(resolvedType.rawValue)\(until); order ID \(TestkitOrders.orderId(ofTransaction: id)))"
        if printOnly {
            print(jws)
        } else if appleOnly {
            print(id)
            TestkitCommand.printError(
                "testkit: \(note), known to testkit apple only (not posted): POST /v1/users/\(user!)/sync {\"transactionId\": \"\(id)\"} imports it"
            )
            return 0
        } else {
            let body = JSONValue.object(["userId": .string(user!), "signedTransaction": .string(jws)]).serialized()
            try deliver(body, to: target!, key: key, minted: note)
        }
        TestkitCommand.printError("testkit: " + note)
        return 0
    }
}
