import Arguments
import Foundation
import JSON

/// `testkit retention-message`.
extension TestkitCommand {
    /// Mints Apple's realtime request about a chain the store minted, signed by the test CA as
    /// every fact of the store is, and posts `{"signedPayload"}` to the service's
    /// `/v1/apple/retention-message` without an API key (Apple sends none); prints the answer,
    /// Apple's `RealtimeResponseBody`, as the service gave it. Nothing is kept in the state:
    /// Apple keeps no record a later call would show.
    static func retentionMessage(_ parsed: CommandLineArguments, _ load: @escaping TestkitConfiguration.Loader) throws
        -> Int32
    {
        let printOnly = parsed.switches.contains("print")
        guard let text = parsed.options["original-transaction-id"] else {
            throw usageError("testkit retention-message needs --original-transaction-id")
        }
        let chain = try transactionId(text, flag: "original-transaction-id")
        let locale = parsed.options["locale"] ?? "en-US"
        guard !locale.isEmpty, locale.count <= 35,
            locale.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { throw usageError("--locale must be a locale such as en-US, got \"\(locale)\"") }
        if let product = parsed.options["product"], product.isEmpty { throw usageError("--product must not be empty") }
        if parsed.options["key"] != nil {
            throw usageError("--key has no use here: Apple calls the endpoint without one")
        }
        let target = try destination(parsed, path: "/v1/apple/retention-message", printOnly: printOnly)

        let store = try store(parsed, load)
        let app = try store.app()
        let signer = try store.authority().signer()
        let uuid = UUID().uuidString.lowercased()
        let payload = try TestkitMinter.retentionRequest(
            originalTransactionId: chain, productId: parsed.options["product"], userLocale: locale,
            appAppleId: app.appAppleId, now: nowMillis(), uuid: uuid, state: try store.loadState())
        let jws = signer.sign(payload: payload.serialized())
        let note =
            "minted retention request about \(chain) (\(payload["productId"]?.stringValue ?? ""), \(locale), requestIdentifier \(uuid))"
        if printOnly {
            print(jws)
        } else {
            try deliver(
                JSONValue.object(["signedPayload": .string(jws)]).serialized(), to: target!, key: nil, minted: note)
        }
        TestkitCommand.printError("testkit: " + note)
        return 0
    }
}
