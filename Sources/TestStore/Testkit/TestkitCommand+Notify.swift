import AppStore
import Arguments
import Foundation
import JSON

/// `testkit notify`.
extension TestkitCommand {
    static func notify(_ parsed: CommandLineArguments, _ load: @escaping TestkitConfiguration.Loader) throws -> Int32 {
        let printOnly = parsed.switches.contains("print")
        let appleOnly = try appleOnly(parsed)
        guard let type = parsed.options["type"] else { throw usageError("testkit notify needs --type") }
        guard let rules = TestkitMinter.notificationTypes[type] else {
            let words = TestkitMinter.notificationTypes.keys.sorted().joined(separator: ", ")
            throw usageError("--type must be one of \(words), got \"\(type)\"")
        }
        let subtype = parsed.options["subtype"]
        if let subtype, !rules.subtypes.contains(subtype) {
            let allowed =
                rules.subtypes.isEmpty
                ? "\(type) takes no --subtype" : "expected " + rules.subtypes.sorted().joined(separator: ", ")
            throw usageError("--subtype \"\(subtype)\" does not go with \(type): \(allowed)")
        }
        if subtype == nil && rules.required {
            throw usageError("\(type) needs --subtype \(rules.subtypes.sorted().joined(separator: "|"))")
        }
        let chain = try parsed.options["original-transaction-id"].map {
            try transactionId($0, flag: "original-transaction-id")
        }
        let single = try parsed.options["transaction-id"].map { try transactionId($0, flag: "transaction-id") }
        let aboutNoChain = TestkitMinter.aboutNoChain.contains(type)
        if aboutNoChain && (chain != nil || single != nil) {
            throw usageError("\(type) is about no transaction: drop --original-transaction-id and --transaction-id")
        }
        if !aboutNoChain && chain == nil { throw usageError("\(type) needs --original-transaction-id") }
        var expires: TestkitExpiry?
        if let text = parsed.options["expires"] {
            guard type == "DID_RENEW" else {
                throw usageError("--expires is only for DID_RENEW (the new period's end)")
            }
            expires = try expiry(text)
        }
        var percentage: Int64?
        if let text = parsed.options["percentage"] {
            guard type == "REFUND" else {
                throw usageError("--percentage is only for REFUND (a prorated refund's share), not \(type)")
            }
            percentage = try refundPercentage(text)
        }
        let target = try destination(
            parsed, path: "/v1/notifications/apple", printOnly: printOnly || appleOnly,
            notPosting: appleOnly ? "--apple-only" : "--print")

        let store = try store(parsed, load)
        let app = try store.app()
        let signer = try store.authority().signer()
        let request = TestkitNotification(
            type: type, subtype: subtype, originalTransactionId: chain, transactionId: single, expires: expires,
            percentage: percentage)
        let (payload, jws) = try store.withStateLock {
            var state = try store.loadState()
            let payload = try TestkitMinter.notification(
                request, bundleId: app.bundleId, now: nowMillis(), uuid: UUID().uuidString.lowercased(), state: &state,
                sign: { signer.sign(payload: $0.serialized()) })
            let jws = signer.sign(payload: payload.serialized())
            // Apple "sent" it, posted or not: `testkit apple` lists it in the notification history.
            state.notifications.append(jws)
            try store.save(state)
            return (payload, jws)
        }
        let about = chain.map { " about \($0)" } ?? ""
        let note =
            "minted notification \(type)\(subtype.map { "/\($0)" } ?? "")\(about) (\(payload["notificationUUID"]?.stringValue ?? ""))"
        if printOnly {
            print(jws)
        } else if appleOnly {
            print(payload["notificationUUID"]?.stringValue ?? "")
            TestkitCommand.printError(
                "testkit: \(note), known to testkit apple only (not posted): POST /v1/admin/reconcile finds it in the notification history"
            )
            return 0
        } else {
            try deliver(
                JSONValue.object(["signedPayload": .string(jws)]).serialized(), to: target!, key: nil, minted: note)
        }
        TestkitCommand.printError("testkit: " + note)
        return 0
    }
}
