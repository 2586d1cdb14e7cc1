import AppStore
import Arguments
import Foundation
import Glibc
import HTTP
import JSON

/// `testkit apple`: Apple for the test store, on 127.0.0.1 — its verifyReceipt and its App Store
/// Server API. `testkit init` points the config's `verifyReceipt` URLs and the app's
/// `serverAPI.baseURLs.LocalTesting` here, so `serve` verifies `testkit receipt`s, and syncs and
/// reconciles, as it does with Apple. It answers `environment` "LocalTesting" (what the store
/// signs), so only an app accepting LocalTesting takes its answers; the answers themselves are
/// `VerifyReceiptStandIn`'s and `AppStoreServerAPIStandIn`'s (`TestkitServerAPI`). The
/// notifications Apple would send (a TEST one asked for, RENEWAL_EXTENDED after an extension)
/// go to the service at `--url` (else IAP_LEDGER_URL, else http://127.0.0.1:8080), as Apple
/// sends to the URL set in App Store Connect.
enum TestkitApple {
    static func run(_ parsed: CommandLineArguments, _ load: @escaping TestkitConfiguration.Loader) throws -> Int32 {
        var asked: Int?
        if let text = parsed.options["port"] {
            guard let number = Int(text), (0...65535).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "--port must be 0…65535 (0: any free port), got \"\(text)\"")
            }
            asked = number
        }
        // Where "Apple" sends notifications: the service the other testkit commands post to.
        let notificationURL = try TestkitCommand.destination(parsed, path: "/v1/notifications/apple", printOnly: false)!
        let store = try TestkitCommand.store(parsed, load)
        let configuration = try store.configuration()
        // Without --port: where the config sends Apple's requests (`init --apple-port`).
        let port =
            asked ?? [configuration.verifyReceiptProduction].compactMap { URL(string: $0) }
            .first { $0.host == "127.0.0.1" }?.port ?? TestkitStore.defaultApplePort
        let rootDER = try store.authority().rootDER
        let app = try store.app()
        let serverAPI = try TestkitServerAPI(store: store, app: app, notificationURL: notificationURL)
        var secrets: [String: String?] = [:]
        for app in configuration.apps { secrets[app.bundleId] = app.sharedSecret }
        let standIn = VerifyReceiptStandIn(
            trustedRootsDER: [rootDER], sharedSecrets: secrets, environment: AppStoreEnvironment.localTesting)

        var router = Router()
        router.add("POST", "/verifyReceipt") { request, _ in
            // The renewal preferences `testkit notify` changed since the receipt was minted.
            let renewals = (try? store.loadState())?.renewals ?? [:]
            let answer = standIn.answer(request.body, now: TestkitCommand.nowMillis()) { chain in
                renewals[chain].map(TestkitReceipt.renewal)
            }
            return .json(200, answer.serialized())
        }
        // Apple answers any other method with status 21000 ("not an HTTP POST"), still HTTP 200.
        router.add("GET", "/verifyReceipt") { _, _ in .json(200, JSONValue.object(["status": 21000]).serialized()) }

        // Block the stop signals before the workers start (they inherit the mask), as serve does.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        let handler = router
        var http = HTTPServer.Configuration(host: "127.0.0.1", port: port)
        http.threadCount = 2
        let server = HTTPServer(configuration: http) { request in
            guard request.path.hasPrefix("/inApps/") else { return handler.handle(request) }
            return serverAPI?.handle(request) ?? HTTPResponse(status: 404)
        }
        let bound: Int
        do { bound = try server.start() } catch {
            throw TestkitError("testkit apple cannot listen on 127.0.0.1:\(port): \(error)")
        }
        let url = "http://127.0.0.1:\(bound)/verifyReceipt"
        if configuration.verifyReceiptProduction != url || configuration.verifyReceiptSandbox != url {
            TestkitCommand.printError(
                "testkit apple: note: \(store.configPath) sends receipts to \(configuration.verifyReceiptProduction), not here"
            )
        }
        let base = "http://127.0.0.1:\(bound)"
        let configured = app.serverAPI?.localTestingURL
        if serverAPI == nil {
            TestkitCommand.printError(
                "testkit apple: note: \(store.configPath) has no serverAPI (a store made before testkit served the Server API): only verifyReceipt is served"
            )
        } else if configured.map({ $0.hasSuffix("/") ? String($0.dropLast()) : $0 }) != base {
            TestkitCommand.printError(
                "testkit apple: note: \(store.configPath) sends Server API requests to \(configured ?? "?"), not here")
        }
        print("iap-ledger testkit apple listening on \(url)")
        if serverAPI != nil {
            print("iap-ledger testkit apple: App Store Server API (LocalTesting) at \(base)")
            print(
                "iap-ledger testkit apple: notifications (TEST, RENEWAL_EXTENDED) go to \(notificationURL.absoluteString)"
            )
        }
        fflush(nil)
        var received: Int32 = 0
        sigwait(&signals, &received)
        server.stop()
        return 0
    }
}
