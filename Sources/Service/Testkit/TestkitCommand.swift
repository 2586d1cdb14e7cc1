import AppStore
import Foundation
import JSON

/// `iap-ledger testkit init|purchase|notify|receipt|apple` (docs/api.md §1.2): a local test store that mints
/// App Store data signed by its own CA, so every path of the API can be tried without an iPhone.
enum TestkitCommand {
    static let usage = """
        usage: iap-ledger testkit <init|purchase|notify|receipt|apple> [options]
        A local test store: signed App Store data for a LocalTesting app, from a private CA (not Apple).

          testkit init [--data-dir DIR] [--apple-port N]
              creates DIR/testkit/: the test CA, a config trusting it for one LocalTesting-only app
              (com.example.game: pro.monthly → "pro", coins100 → 100 coins, removeads → "no_ads";
              a shared secret; verifyReceipt at the stand-in, http://127.0.0.1:N/verifyReceipt,
              N 8089 unless --apple-port) and the state of what was minted; prints how to serve
              with it. Creates no database: `serve` creates the embedded cluster on its first start.
          testkit purchase --user U --product P [--type auto-renewable|consumable|non-consumable|non-renewing]
                           [--expires RFC3339|P1M|PT5M] [--quantity N] [--app-account-token UUID]
              mints a signed transaction (a new chain; ids count up from 2000000001 in a new store)
              and posts {"userId","signedTransaction"} to URL/v1/purchases. --type defaults to the
              product's type in the config; --expires (auto-renewable only) to P1M from now.
          testkit notify --type TYPE [--subtype S] --original-transaction-id ID [--transaction-id ID] [--expires …]
              mints a signed App Store Server Notification V2 about a chain `purchase` minted and
              posts {"signedPayload"} to URL/v1/notifications/apple. TYPE:
                DID_RENEW [BILLING_RECOVERY]   a new period from now (as long as the last, or --expires)
                REFUND, REVOKE, REFUND_REVERSED  revokes (or restores) the latest or --transaction-id
                DID_CHANGE_RENEWAL_STATUS AUTO_RENEW_DISABLED|AUTO_RENEW_ENABLED
                EXPIRED [VOLUNTARY|BILLING_RETRY|PRICE_INCREASE|PRODUCT_NOT_FOR_SALE]
                    (auto-renew off; access still follows expiresDate: purchase with --expires PT1M
                    to see a subscription lapse)
                DID_FAIL_TO_RENEW [GRACE_PERIOD], GRACE_PERIOD_EXPIRED, SUBSCRIBED, DID_CHANGE_RENEWAL_PREF,
                OFFER_REDEEMED, PRICE_INCREASE PENDING|ACCEPTED, REFUND_DECLINED, CONSUMPTION_REQUEST,
                RENEWAL_EXTENDED, ONE_TIME_CHARGE   the chain as it stands; TEST needs no chain
          testkit receipt --user U [--product P …]
              StoreKit 1: buys each --product (a new chain each; --product may be repeated) and mints
              U's app receipt, a PKCS#7 SignedData in Apple's receipt format signed by the test CA,
              holding every chain U bought this way with its renewals (without --product: a new
              receipt of what U has, as a restore), and posts {"userId","receipt"} to URL/v1/purchases.
              The service verifies it with verifyReceipt: run `testkit apple` beside serve.
          testkit apple [--port N] [--data-dir DIR]
              a stand-in for Apple's verifyReceipt for the test store on 127.0.0.1:N (8089; 0: any
              free port), until SIGINT/SIGTERM: POST /verifyReceipt {"receipt-data","password",
              "exclude-old-transactions"} answers as Apple's (status 0 with the receipt's purchases,
              environment "LocalTesting"; 21002 not a receipt, 21003 not signed by the test CA,
              21004 wrong password, i.e. not the config's sharedSecret).

          common options:
            --data-dir DIR   where the test store is (default ./.iap-ledger, as serve)
            --url URL        the running service (default IAP_LEDGER_URL, else http://127.0.0.1:8080)
            --key SECRET     an API key with the write scope, for purchases (default IAP_LEDGER_KEY)
            --print          print the signed JWS (receipt: the base64 receipt) on stdout instead of posting it
        """

    static let common: Set<String> = ["data-dir", "url", "key"]

    static func run(_ arguments: [String]) throws -> Int32 {
        guard let subcommand = arguments.first, !subcommand.hasPrefix("--") else {
            if arguments.contains("--help") {
                print(usage)
                return 0
            }
            CommandLineInterface.printError(usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        switch subcommand {
        case "init":
            let parsed = try CommandLineArguments(rest, valued: ["data-dir", "apple-port"], switches: [])
            if parsed.wantsHelp { print(usage); return 0 }
            try noPositionals(parsed)
            return try initialise(parsed)
        case "purchase":
            let parsed = try CommandLineArguments(
                rest, valued: common.union(["user", "product", "type", "expires", "quantity", "app-account-token"]),
                switches: ["print"])
            if parsed.wantsHelp { print(usage); return 0 }
            try noPositionals(parsed)
            return try purchase(parsed)
        case "notify":
            let parsed = try CommandLineArguments(
                rest, valued: common.union(["type", "subtype", "original-transaction-id", "transaction-id", "expires"]),
                switches: ["print"])
            if parsed.wantsHelp { print(usage); return 0 }
            try noPositionals(parsed)
            return try notify(parsed)
        case "receipt":
            let parsed = try CommandLineArguments(rest, valued: common.union(["user", "product"]), switches: ["print"])
            if parsed.wantsHelp { print(usage); return 0 }
            try noPositionals(parsed)
            return try receipt(parsed)
        case "apple":
            let parsed = try CommandLineArguments(rest, valued: ["data-dir", "port"], switches: [])
            if parsed.wantsHelp { print(usage); return 0 }
            try noPositionals(parsed)
            return try TestkitApple.run(parsed)
        default:
            throw CommandLineArguments.UsageError(
                description: "unknown testkit subcommand \"\(subcommand)\" (expected init, purchase, notify, receipt or apple)")
        }
    }

    private static func noPositionals(_ parsed: CommandLineArguments) throws(CommandLineArguments.UsageError) {
        if let extra = parsed.positionals.first {
            throw CommandLineArguments.UsageError(description: "unexpected argument \"\(extra)\"")
        }
    }

    private static func usageError(_ text: String) -> CommandLineArguments.UsageError { .init(description: text) }

    static func nowMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    static func store(_ parsed: CommandLineArguments) throws -> TestkitStore {
        let directory = parsed.options["data-dir"] ?? "./.iap-ledger"
        guard !directory.isEmpty else { throw usageError("--data-dir must not be empty") }
        return TestkitStore(dataDirectory: directory)
    }

    // MARK: - init

    static func initialise(_ parsed: CommandLineArguments) throws -> Int32 {
        var applePort = TestkitStore.defaultApplePort
        if let text = parsed.options["apple-port"] {
            guard let number = Int(text), (1...65535).contains(number) else {
                throw usageError("--apple-port must be 1…65535, got \"\(text)\"")
            }
            applePort = number
        }
        var store = try store(parsed)
        let existed = store.exists
        if !existed { try store.create(now: nowMillis(), applePort: applePort) }
        // Absolute paths in the printout, so the commands work from any directory.
        if let resolved = realpath(store.dataDirectory, nil) {
            store = TestkitStore(dataDirectory: String(cString: resolved))
            free(resolved)
        }
        let data = store.dataDirectory
        let verifyURL = (try? store.configuration().verifyReceipt.production) ?? "?"
        print(existed ? "a test store already exists in \(store.directory) (left as it is)"
                      : "created a test store in \(store.directory):")
        print("""
              config.json     app \(TestkitStore.bundleId), environments ["LocalTesting"] only; products
                                \(TestkitStore.subscription)  subscription → "pro"
                                \(TestkitStore.coins)     consumable → 100 coins
                                \(TestkitStore.removeAds)    non-consumable → "no_ads"
              ca-root.der     the test CA's root ("\(TestCertificateAuthority.rootCommonName)"): a config
                              trusting it for Production or Sandbox is refused
              ca-leaf.key     the key testkit signs with (mode 0600); state.json what it minted
            next:
              iap-ledger serve --config \(store.configPath) --data-dir \(data) &
              export IAP_LEDGER_KEY=$(iap-ledger keys create --name testkit --scopes read,write,admin --data-dir \(data) | tail -n 1)
              iap-ledger testkit purchase --data-dir \(data) --user u-1 --product \(TestkitStore.subscription)
              iap-ledger testkit notify --data-dir \(data) --type REFUND --original-transaction-id 2000000001
            StoreKit 1 receipts are verified by the stand-in for Apple's verifyReceipt, at \(verifyURL):
              iap-ledger testkit apple --data-dir \(data) &
              iap-ledger testkit receipt --data-dir \(data) --user u-2 --product \(TestkitStore.removeAds)
            (serve listens on http://127.0.0.1:8080 by default; with --port, set IAP_LEDGER_URL to the URL it prints)
            """)
        return 0
    }

    // MARK: - purchase

    static func purchase(_ parsed: CommandLineArguments) throws -> Int32 {
        let printOnly = parsed.switches.contains("print")
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
            guard let uuid = UUID(uuidString: text) else { throw usageError("--app-account-token must be a UUID, got \"\(text)\"") }
            token = uuid.uuidString.lowercased()
        }
        let target = try destination(parsed, path: "/v1/purchases", printOnly: printOnly)
        let key = printOnly ? nil : try apiKey(parsed)

        let store = try store(parsed)
        let app = try store.app()
        let configured = app.products[productId].map { TestkitProductType($0.kind) }
        guard let resolvedType = type ?? configured else {
            throw usageError("product \(productId) is not in \(store.configPath): pass --type")
        }
        if expires != nil && resolvedType != .autoRenewable {
            throw usageError("--expires is only for auto-renewable subscriptions (\(productId) is \(resolvedType.rawValue))")
        }
        if quantity != 1 && resolvedType != .consumable {
            throw usageError("--quantity is only for consumables (\(productId) is \(resolvedType.rawValue))")
        }

        let signer = try store.authority().signer()
        let request = TestkitPurchase(
            productId: productId, type: resolvedType, expires: expires, quantity: quantity, appAccountToken: token)
        let payload = try store.withStateLock {
            var state = try store.loadState()
            let payload = try TestkitMinter.purchase(request, bundleId: app.bundleId, now: nowMillis(), state: &state)
            try store.save(state)
            return payload
        }
        let jws = signer.sign(payload: JSONValue.object(payload).serialized())
        let id = payload["transactionId"]?.stringValue ?? ""
        let until = payload["expiresDate"]?.int64Value.map { ", expires \(RFC3339.format($0))" } ?? ""
        let note = "minted transaction \(id) (\(productId), \(resolvedType.rawValue)\(until))"
        if printOnly {
            print(jws)
        } else {
            let body = JSONValue.object(["userId": .string(user!), "signedTransaction": .string(jws)]).serialized()
            try deliver(body, to: target!, key: key, minted: note)
        }
        CommandLineInterface.printError("testkit: " + note)
        return 0
    }

    // MARK: - notify

    static func notify(_ parsed: CommandLineArguments) throws -> Int32 {
        let printOnly = parsed.switches.contains("print")
        guard let type = parsed.options["type"] else { throw usageError("testkit notify needs --type") }
        guard let rules = TestkitMinter.notificationTypes[type] else {
            let words = TestkitMinter.notificationTypes.keys.sorted().joined(separator: ", ")
            throw usageError("--type must be one of \(words), got \"\(type)\"")
        }
        let subtype = parsed.options["subtype"]
        if let subtype, !rules.subtypes.contains(subtype) {
            let allowed = rules.subtypes.isEmpty ? "\(type) takes no --subtype" : "expected " + rules.subtypes.sorted().joined(separator: ", ")
            throw usageError("--subtype \"\(subtype)\" does not go with \(type): \(allowed)")
        }
        if subtype == nil && rules.required {
            throw usageError("\(type) needs --subtype \(rules.subtypes.sorted().joined(separator: "|"))")
        }
        let chain = try parsed.options["original-transaction-id"].map { try transactionId($0, flag: "original-transaction-id") }
        let single = try parsed.options["transaction-id"].map { try transactionId($0, flag: "transaction-id") }
        if type == "TEST" && (chain != nil || single != nil) {
            throw usageError("TEST is about no transaction: drop --original-transaction-id and --transaction-id")
        }
        if type != "TEST" && chain == nil { throw usageError("\(type) needs --original-transaction-id") }
        var expires: TestkitExpiry?
        if let text = parsed.options["expires"] {
            guard type == "DID_RENEW" else { throw usageError("--expires is only for DID_RENEW (the new period's end)") }
            expires = try expiry(text)
        }
        let target = try destination(parsed, path: "/v1/notifications/apple", printOnly: printOnly)

        let store = try store(parsed)
        let app = try store.app()
        let signer = try store.authority().signer()
        let request = TestkitNotification(
            type: type, subtype: subtype, originalTransactionId: chain, transactionId: single, expires: expires)
        let payload = try store.withStateLock {
            var state = try store.loadState()
            let payload = try TestkitMinter.notification(
                request, bundleId: app.bundleId, now: nowMillis(), uuid: UUID().uuidString.lowercased(), state: &state,
                sign: { signer.sign(payload: $0.serialized()) })
            try store.save(state)
            return payload
        }
        let jws = signer.sign(payload: payload.serialized())
        let about = chain.map { " about \($0)" } ?? ""
        let note = "minted notification \(type)\(subtype.map { "/\($0)" } ?? "")\(about) (\(payload["notificationUUID"]?.stringValue ?? ""))"
        if printOnly {
            print(jws)
        } else {
            try deliver(JSONValue.object(["signedPayload": .string(jws)]).serialized(), to: target!, key: nil, minted: note)
        }
        CommandLineInterface.printError("testkit: " + note)
        return 0
    }

    // MARK: - receipt

    static func receipt(_ parsed: CommandLineArguments) throws -> Int32 {
        let printOnly = parsed.switches.contains("print")
        let user = try parsed.options["user"].map(validUser)
        guard printOnly || user != nil else { throw usageError("testkit receipt needs --user (or --print)") }
        let productIds = try (parsed.repeated["product"] ?? []).map(validProduct)
        guard user != nil || !productIds.isEmpty else {
            throw usageError("testkit receipt --print without --user needs --product (a receipt of nothing is no receipt)")
        }
        let target = try destination(parsed, path: "/v1/purchases", printOnly: printOnly)
        let key = printOnly ? nil : try apiKey(parsed)

        let store = try store(parsed)
        let app = try store.app()
        let products = try productIds.map { id throws(CommandLineArguments.UsageError) in
            guard let product = app.products[id] else {
                throw usageError("product \(id) is not in \(store.configPath) (testkit receipt buys configured products only)")
            }
            return (id: id, type: TestkitProductType(product.kind))
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
        CommandLineInterface.printError("testkit: " + note)
        return 0
    }

    // MARK: - shared checks and delivery

    static func validUser(_ text: String) throws(CommandLineArguments.UsageError) -> String {
        guard !text.isEmpty, text.utf8.count <= 256,
              !text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        else { throw usageError("--user must be 1–256 bytes without control characters") }
        return text
    }

    static func validProduct(_ productId: String) throws(CommandLineArguments.UsageError) -> String {
        guard !productId.isEmpty, productId.utf8.count <= 256,
              !productId.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F })
        else { throw usageError("--product must be a product id (no spaces, at most 256 bytes), got \"\(productId)\"") }
        return productId
    }

    static func transactionId(_ text: String, flag: String) throws(CommandLineArguments.UsageError) -> String {
        guard !text.isEmpty, text.count <= 32, text.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw usageError("--\(flag) must be a transaction id (digits), got \"\(text)\"")
        }
        return text
    }

    static func expiry(_ text: String) throws(CommandLineArguments.UsageError) -> TestkitExpiry {
        guard let parsed = TestkitExpiry.parse(text) else {
            throw usageError(
                "--expires must be an RFC 3339 time (2026-12-31T10:00:00Z) or an ISO 8601 duration (P1M, P7D, PT5M), got \"\(text)\"")
        }
        return parsed
    }

    /// `--url` (or IAP_LEDGER_URL, else serve's default) + `path`; nil with `--print`.
    static func destination(_ parsed: CommandLineArguments, path: String, printOnly: Bool) throws -> URL? {
        if printOnly {
            if let flag = ["url", "key"].first(where: { parsed.options[$0] != nil }) {
                throw usageError("--\(flag) has no use with --print (nothing is posted)")
            }
            return nil
        }
        let source = parsed.options["url"] != nil ? "--url" : "IAP_LEDGER_URL"
        var text = parsed.options["url"] ?? CommandLineInterface.environment("IAP_LEDGER_URL") ?? "http://127.0.0.1:8080"
        while text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text + path), let scheme = url.scheme, ["http", "https"].contains(scheme),
              url.host?.isEmpty == false, url.query == nil
        else { throw usageError("\(source) must be the service's http(s) URL (as serve prints it), got \"\(text)\"") }
        return url
    }

    static func apiKey(_ parsed: CommandLineArguments) throws -> String {
        guard let key = parsed.options["key"] ?? CommandLineInterface.environment("IAP_LEDGER_KEY") else {
            throw usageError("posting a purchase needs an API key with the write scope: --key or IAP_LEDGER_KEY")
        }
        guard !key.isEmpty, key.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline }) else {
            throw usageError("the API key must be printable ASCII without spaces")
        }
        return key
    }

    /// Posts and prints the service's answer; a failure is one line saying what was minted (it
    /// stays in the state: the chain goes on) and what went wrong.
    static func deliver(_ body: [UInt8], to url: URL, key: String?, minted: String) throws(TestkitError) {
        let answer: TestkitPoster.Answer
        do { answer = try TestkitPoster.post(body, to: url, key: key) } catch {
            throw TestkitError("\(minted), but \(error.description)")
        }
        print(answer.body)
        guard (200..<300).contains(answer.status) else {
            throw TestkitError("\(minted), but the service answered HTTP \(answer.status) (its answer is on stdout)")
        }
    }
}
