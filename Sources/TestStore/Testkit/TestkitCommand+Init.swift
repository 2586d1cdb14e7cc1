import AppStore
import Arguments
import Foundation
import JSON

/// `testkit init`.
extension TestkitCommand {
    static func initialise(_ parsed: CommandLineArguments, _ load: @escaping TestkitConfiguration.Loader) throws
        -> Int32
    {
        var applePort = TestkitStore.defaultApplePort
        if let text = parsed.options["apple-port"] {
            guard let number = Int(text), (1...65535).contains(number) else {
                throw usageError("--apple-port must be 1…65535, got \"\(text)\"")
            }
            applePort = number
        }
        var store = try store(parsed, load)
        let existed = store.exists
        if !existed { try store.create(now: nowMillis(), applePort: applePort) }
        // Absolute paths in the printout, so the commands work from any directory.
        if let resolved = realpath(store.dataDirectory, nil) {
            store = TestkitStore(dataDirectory: String(cString: resolved), loadConfiguration: load)
            free(resolved)
        }
        let data = store.dataDirectory
        // Where the config sends Apple's requests (the stand-in's).
        let verifyURL = (try? store.configuration().verifyReceiptProduction) ?? "?"
        let serverAPIURL = ((try? store.app())?.serverAPI?.localTestingURL) ?? "(no serverAPI in this store)"
        let keyFile =
            ((try? store.app())?.serverAPI?.privateKeyPath).map { ($0 as NSString).lastPathComponent }
            ?? "(no serverAPI key: a store made before testkit served the Server API)"
        print(
            existed
                ? "a test store already exists in \(store.directory) (left as it is)"
                : "created a test store in \(store.directory):")
        print(
            """
              config.json     app \(TestkitStore.bundleId), environments ["LocalTesting"] only; products
                                \(TestkitStore.subscription)  subscription → "pro"
                                \(TestkitStore.coins)     consumable → 100 coins
                                \(TestkitStore.removeAds)    non-consumable → "no_ads"
              ca-root.der     the test CA's root ("\(TestCertificateAuthority.rootCommonName)"): a config
                              trusting it for Production or Sandbox is refused
              ca-leaf.key     the key testkit signs with (mode 0600); state.json what it minted
              \(keyFile)  the store's In-App Purchase key (serverAPI; mode 0600)
            next:
              iap-ledger serve --config \(store.configPath) --data-dir \(data) &
              export IAP_LEDGER_KEY=$(iap-ledger keys create --name testkit --scopes read,write,admin --data-dir \(data) | tail -n 1)
              iap-ledger testkit purchase --data-dir \(data) --user u-1 --product \(TestkitStore.subscription)
              iap-ledger testkit notify --data-dir \(data) --type REFUND --original-transaction-id 2000000001
            StoreKit 1 receipts (\(verifyURL)), sync and reconcile (the Server API at
            \(serverAPIURL)) ask the stand-in for Apple:
              iap-ledger testkit apple --data-dir \(data) &
              iap-ledger testkit receipt --data-dir \(data) --user u-2 --product \(TestkitStore.removeAds)
              ID=$(iap-ledger testkit purchase --data-dir \(data) --user u-3 --product \(TestkitStore.coins) --apple-only)
              curl -H "Authorization: Bearer $IAP_LEDGER_KEY" -d "{\\"transactionId\\": \\"$ID\\"}" \\
                   ${IAP_LEDGER_URL:-http://127.0.0.1:8080}/v1/users/u-3/sync
            (serve listens on http://127.0.0.1:8080 by default; with --port, set IAP_LEDGER_URL to the URL it prints)
            """)
        return 0
    }
}
