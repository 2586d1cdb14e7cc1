import AppStore
import Foundation
import JSON

/// `testkit init`.
extension TestkitCommand {
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
}
