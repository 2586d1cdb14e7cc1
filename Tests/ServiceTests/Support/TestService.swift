import EventStore
import Foundation
import JSON
import Synchronization
import TestSupport

@testable import AppleAPI
@testable import Infrastructure
@testable import Service

/// "Now" for a test service: the wall clock plus an offset the test moves, so expiry and grace
/// are judged at chosen instants while `recorded_at` (PostgreSQL's clock) stays comparable. A
/// clock `frozenAt` an instant stands there until moved (the replay suites: a replay renders
/// at the same "now" as the live path did).
final class TestClock: Sendable {
    private let offset = Atomic<Int64>(0)
    private let frozen: Int64?

    init(frozenAt instant: Int64? = nil) { frozen = instant }

    private var base: Int64 { frozen ?? TestVectors.nowMillis }

    var now: Int64 { base + offset.load(ordering: .relaxed) }

    func advance(by milliseconds: Int64) { offset.add(milliseconds, ordering: .relaxed) }

    /// Pins "now" to `instant` (a ticking clock keeps ticking with the wall clock from there).
    func set(_ instant: Int64) { offset.store(instant - base, ordering: .relaxed) }
}

/// Every line the service logged, for the no-secrets-in-logs test.
final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    var text: String { lines.withLock { $0.joined() } }
    var logger: Logger {
        Logger(
            minimumLevel: .debug,
            sink: { [self] line in
                if ProcessInfo.processInfo.environment["IAP_TEST_PRINT_LOG"] != nil { print(line, terminator: "") }
                lines.withLock { $0.append(line) }
            })
    }
}

/// A real `ServiceApp` on a fresh migrated database, listening on a free port, with one API
/// key per scope. Call `stop()` at the end of the test.
final class TestService: @unchecked Sendable {
    static let bundleId = TestVectors.bundleId
    static let coins = "com.example.coins100"
    static let monthly = "com.example.monthly"
    static let yearly = "com.example.yearly"
    static let removeAds = "com.example.removeads"
    static let sharedSecret = "shared-secret-5f2c9a"

    let app: ServiceApp
    let clock: TestClock
    let log: LogCapture
    let conninfo: String
    /// scope → secret; "all" holds read,write,admin.
    let keys: [String: String]

    static func configuration(
        policy: Configuration.TransferPolicy = .transfer, verifyReceiptBase: String = "http://127.0.0.1:9",
        trustedRoots: [[UInt8]] = [TestVectors.shared.rootDER]
    ) -> Configuration {
        var configuration = Configuration.empty
        configuration.apps = [
            Configuration.App(
                bundleId: bundleId, appAppleId: TestVectors.appAppleId, environments: ["Sandbox", "Production"],
                sharedSecret: sharedSecret,
                products: [
                    coins: .init(kind: .consumable, entitlements: [], grants: ["coins": 100]),
                    monthly: .init(kind: .subscription, entitlements: ["pro"], grants: [:]),
                    yearly: .init(kind: .subscription, entitlements: ["pro"], grants: [:]),
                    removeAds: .init(kind: .nonConsumable, entitlements: ["no_ads"], grants: [:]),
                ])
        ]
        configuration.trustedRootsDER = trustedRoots
        configuration.transferPolicy = policy
        configuration.verifyReceipt = .init(
            production: verifyReceiptBase + "/prod", sandbox: verifyReceiptBase + "/sandbox", timeoutSeconds: 3,
            retries: 0)
        return configuration
    }

    /// - Parameters:
    ///   - sharing: another test service whose database (and API keys) this one uses, like a
    ///     second process of a deployment; nil: a fresh database.
    ///   - bouncer: a PgBouncer (transaction pooling) the service connects through; nil: the
    ///     shared one when `IAP_TEST_DATABASE_VIA=pgbouncer`, else PostgreSQL directly.
    ///     `conninfo` (the tests' own admin access) always goes directly.
    init(
        configuration: Configuration = TestService.configuration(), threads: Int = 4, clock: TestClock = TestClock(),
        sharing other: TestService? = nil, offerSigners: OfferRoutes.SignerLookup? = nil,
        through bouncer: PgBouncer? = nil
    ) throws {
        conninfo = try other?.conninfo ?? TestDatabase.shared.freshDatabase()
        let log = LogCapture()
        var options = ServiceApp.Options()
        options.configuration = configuration
        let target =
            if let bouncer { (try bouncer.connectionString(replacing: conninfo), PoolMode.transaction) } else {
                try PgBouncer.serviceTarget(for: conninfo)
            }
        options.databaseURL = target.0
        options.databasePoolMode = target.1
        options.port = 0
        options.threads = threads
        options.logger = log.logger
        options.clock = { clock.now }
        options.offerSigners = offerSigners
        app = try ServiceApp.start(options)
        self.clock = clock
        self.log = log
        if let other {
            keys = other.keys
            return
        }
        let admin = try Connection(conninfo)
        var keys: [String: String] = [:]
        for (name, scopes) in [
            ("read", ["read"]), ("write", ["write"]), ("admin", ["admin"]),
            ("all", ["read", "write", "admin"]),
        ] {
            keys[name] = try APIKeys().create(name: "test-\(name)", scopes: scopes, on: admin)
        }
        self.keys = keys
    }

    func stop() { app.stop() }

    /// A new connection authenticated with the key of `scope` ("read", "write", "admin", "all"; nil: none).
    func client(_ scope: String? = "all") -> ServiceHTTPClient {
        ServiceHTTPClient(port: app.port, apiKey: scope.flatMap { keys[$0] })
    }
}

/// The API calls the tests make, over one connection.
extension ServiceHTTPClient {
    func purchase(_ userId: String, _ signedTransaction: String) throws -> Response {
        try post(
            "/v1/purchases", .object(["userId": .string(userId), "signedTransaction": .string(signedTransaction)]))
    }

    func receipt(_ userId: String, _ receipt: String) throws -> Response {
        try post("/v1/purchases", .object(["userId": .string(userId), "receipt": .string(receipt)]))
    }

    func notify(_ signedPayload: String) throws -> Response {
        try post("/v1/notifications/apple", .object(["signedPayload": .string(signedPayload)]), apiKey: .some(nil))
    }

    func user(_ userId: String, asOf: Int64? = nil) throws -> JSONValue {
        let query = asOf.map { "?asOf=" + RFC3339.format($0) } ?? ""
        let response = try get("/v1/users/\(userId)\(query)")
        guard response.status == 200 else { throw Failure(description: "GET user \(response.status) \(response.text)") }
        return response.json
    }

    func userBytes(_ userId: String) throws -> [UInt8] {
        let response = try get("/v1/users/\(userId)")
        guard response.status == 200 else { throw Failure(description: "GET user \(response.status) \(response.text)") }
        return response.body
    }

    func events(_ userId: String) throws -> [JSONValue] {
        var all: [JSONValue] = []
        var after: Int64 = 0
        while true {
            let page = try get("/v1/users/\(userId)/events?after=\(after)&limit=1000").json
            all += page["events"]?.arrayValue ?? []
            guard let next = page["next"]?.int64Value else { return all }
            after = next
        }
    }

    func debit(_ userId: String, _ currency: String, amount: Int64, key: String, reason: String = "test") throws
        -> Response
    {
        try post(
            "/v1/users/\(userId)/balances/\(currency)/debit",
            .object(["amount": .number(String(amount)), "idempotencyKey": .string(key), "reason": .string(reason)]))
    }
}
