import AppStore
import EventStore
import Foundation
import JSON
import Ledger
import TestStore
import TestSupport
import Testing

@testable import AppleAPI
@testable import Infrastructure
@testable import Service

/// Answering Apple's CONSUMPTION_REQUEST (api.md §5) against the stand-in of Apple's Server API,
/// real PostgreSQL and HTTP: what is sent, that each attempt is an event, the retries.
@Suite(.tags(.database)) struct ConsumptionTests {
    static let consent = ConsumptionInfo.Settings(
        customerConsented: true, sampleContentProvided: false, refundPreference: .decline)

    static func service(
        _ apple: AppleServerAPIStandIn, consumption: ConsumptionInfo.Settings? = consent, clock: TestClock = TestClock()
    ) throws -> TestService {
        var configuration = TestService.configuration()
        configuration.apps[0].serverAPI = Configuration.ServerAPI(
            issuerId: "issuer-test", keyId: "KEYTEST123", privateKeyPath: SyncTests.keyPath,
            key: AppStoreServerKey.testKey(),
            productionURL: apple.productionURL.absoluteString, sandboxURL: apple.sandboxURL.absoluteString)
        configuration.apps[0].consumption = consumption
        configuration.reconcileIntervalSeconds = 0
        return try TestService(configuration: configuration, clock: clock)
    }

    /// A coins purchase (100 coins), signed `hour` ago in the Sandbox, known to Apple's stand-in.
    static func coins(_ id: String, _ apple: AppleServerAPIStandIn) -> String {
        let now = TestVectors.nowMillis
        let jws = Mint.signed(
            Mint.transaction(
                id, product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil,
                signed: now - hour))
        apple.sandbox.addTransaction(jws)
        return jws
    }

    static func request(_ id: String, signed: Int64 = TestVectors.nowMillis) -> String {
        let transaction = Mint.transaction(
            id, product: TestService.coins, type: "Consumable", purchase: signed - hour, expires: nil, signed: signed)
        return TestVectors.shared.signedNotification(
            type: "CONSUMPTION_REQUEST", transaction: transaction,
            data: ["consumptionRequestReason": "UNINTENDED_PURCHASE"],
            fields: ["signedDate": .int(signed)])
    }

    static func consumptionCalls(_ apple: AppleServerAPIStandIn) -> [AppStoreServerAPIStandIn.Request] {
        apple.sandbox.requests.filter {
            $0.method == "PUT" && $0.path.hasPrefix("/inApps/v2/transactions/consumption/")
        }
    }

    /// The ConsumptionAnswered events of the log, oldest first.
    static func answers(_ service: TestService) throws -> [JSONValue] {
        let connection = try Connection(service.conninfo)
        let rows = try connection.query(
            "SELECT data::text FROM es.events WHERE type = 'ConsumptionAnswered' ORDER BY seq")
        return try (0..<rows.count).map { try JSONValue.parse(Array(rows[$0, 0]!.utf8)) }
    }

    static func requestRow(_ service: TestService) throws -> (
        state: String, attempts: Int, next: Int64, error: String?
    )? {
        let connection = try Connection(service.conninfo)
        let rows = try connection.query(
            "SELECT state, attempts, next_attempt_at, last_error FROM apple.consumption_requests ORDER BY requested_at DESC LIMIT 1"
        )
        guard rows.count == 1 else { return nil }
        return (rows[0, 0]!, Int(rows[0, 1]!)!, Int64(rows[0, 2]!)!, rows[0, 3])
    }

    /// Waits until the responder ran a whole round that began now: whatever it would do with
    /// what is recorded so far, it has done.
    static func aRoundPasses(_ service: TestService) throws {
        let loop = try #require(service.app.jobs.running(named: ConsumptionResponder.leaseName), "the responder runs")
        let mark = loop.mark()
        try eventually("a consumption responder round", within: 30) { loop.hasRoundEnded(since: mark) }
    }

    @Test func aConsumableWithThirtyOfAHundredCoinsSpentIsAnsweredThirtyPercentOnce() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try Self.service(apple)
        defer { service.stop() }
        let api = service.client()
        #expect(try api.purchase("u-1", Self.coins("6000001", apple)).status == 200)
        #expect(try api.debit("u-1", "coins", amount: 30, key: "sword", reason: "sword").status == 200)

        let notification = Self.request("6000001")
        #expect(try api.notify(notification).json["result"]?.stringValue == "recorded")
        try eventually("answered", within: 20) { Self.consumptionCalls(apple).count == 1 }
        let sent = try JSONValue.parse(Self.consumptionCalls(apple)[0].body)
        #expect(Self.consumptionCalls(apple)[0].path == "/inApps/v2/transactions/consumption/6000001")
        #expect(
            sent
                == .object([
                    "customerConsented": true, "sampleContentProvided": false, "deliveryStatus": "DELIVERED",
                    "consumptionPercentage": .int(30000), "refundPreference": "DECLINE",
                ]))
        try eventually("\(service.log.text)", within: 10) { (try? Self.requestRow(service))?.state == "answered" }
        let answers = try Self.answers(service)
        #expect(answers.count == 1)
        #expect(answers.first?["outcome"]?.stringValue == "accepted")
        #expect(answers.first?["consumptionPercentage"]?.int64Value == 30000)
        #expect(answers.first?["attempt"]?.int64Value == 1)
        #expect(answers.first?["transactionId"]?.stringValue == "6000001")
        // The answer is on u-1's chain: u-1's stored document counts it, as a replay renders it.
        let replay = try api.post("/v1/admin/replay", ["dryRun": .bool(true)])
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["changedUserCount"]?.int64Value == 0, "\(replay.text)")

        // Apple redelivers the same notification: a duplicate, answered once only.
        #expect(try api.notify(notification).json["result"]?.stringValue == "duplicate")
        try Self.aRoundPasses(service)  // a whole responder round since: nothing more may be sent
        #expect(Self.consumptionCalls(apple).count == 1)
        let metrics = try service.client(nil).get("/metrics").text
        #expect(
            metrics.contains(
                #"iap_consumption_answers_total{bundle_id="\#(TestService.bundleId)",result="accepted"} 1"#))
        #expect(metrics.contains("iap_consumption_requests_pending 0"))
    }

    @Test func anUnavailableAppleIsTriedAgainLaterAndEachAttemptIsAnEvent() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let clock = TestClock()
        let service = try Self.service(apple, clock: clock)
        defer { service.stop() }
        let api = service.client()
        #expect(try api.purchase("u-2", Self.coins("6000002", apple)).status == 200)
        // Every attempt of the client's first call (1 + 3 retries) meets a 503.
        apple.sandbox.enqueue(Array(repeating: .serverError(status: 503), count: 4))
        #expect(try api.notify(Self.request("6000002")).status == 200)
        try eventually("the first attempt is recorded", within: 30) { (try? Self.answers(service))?.count == 1 }
        let first = try #require(try Self.answers(service).first)
        #expect(first["outcome"]?.stringValue == "unavailable")
        #expect(first["detail"]?.stringValue?.contains("503") == true, "\(first)")
        let row = try #require(try Self.requestRow(service))
        #expect(row.state == "pending")
        #expect(row.attempts == 1)
        #expect(row.next - clock.now > 50_000, "the next try waits about a minute")
        #expect(Self.consumptionCalls(apple).filter { $0.status == 202 }.isEmpty)

        clock.advance(by: 61_000)
        try eventually("tried again", within: 20) { (try? Self.answers(service))?.count == 2 }
        let second = try Self.answers(service)[1]
        #expect(second["outcome"]?.stringValue == "accepted")
        #expect(second["attempt"]?.int64Value == 2)
        try eventually("(try? Self.requestRow(service))?.state == \"answered\"", within: 10) {
            (try? Self.requestRow(service))?.state == "answered"
        }
    }

    @Test func aRequestPastAppleWindowOrRefusedByAppleIsNotRetried() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let service = try Self.service(apple)
        defer { service.stop() }
        let api = service.client()
        #expect(try api.purchase("u-3", Self.coins("6000003", apple)).status == 200)
        // Signed 13 h ago (Apple retried for that long, say): past the window, nothing is sent.
        #expect(try api.notify(Self.request("6000003", signed: service.clock.now - 13 * hour)).status == 200)
        try eventually("(try? Self.requestRow(service))?.state == \"expired\"", within: 20) {
            (try? Self.requestRow(service))?.state == "expired"
        }
        #expect(Self.consumptionCalls(apple).isEmpty)
        #expect(try Self.answers(service).isEmpty, "no attempt, no event")

        #expect(try api.purchase("u-3", Self.coins("6000004", apple)).status == 200)
        apple.sandbox.enqueue([
            .raw(status: 400, body: #"{"errorCode": 4000036, "errorMessage": "Invalid delivery status."}"#)
        ])
        #expect(try api.notify(Self.request("6000004")).status == 200)
        try eventually("(try? Self.requestRow(service))?.state == \"rejected\"", within: 20) {
            (try? Self.requestRow(service))?.state == "rejected"
        }
        let answer = try #require(try Self.answers(service).first)
        #expect(answer["outcome"]?.stringValue == "rejected")
        #expect(answer["appleErrorCode"]?.int64Value == 4_000_036)
        try Self.aRoundPasses(service)
        #expect(try Self.answers(service).count == 1, "a refusal is final")
    }

    @Test func withoutConsumptionConfigOrConsentNothingIsSent() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        for consumption in [nil, ConsumptionInfo.Settings(customerConsented: false, sampleContentProvided: false)] {
            let service = try Self.service(apple, consumption: consumption)
            defer { service.stop() }
            let id = consumption == nil ? "6000005" : "6000006"
            #expect(try service.client().purchase("u-4", Self.coins(id, apple)).status == 200)
            #expect(try service.client().notify(Self.request(id)).status == 200)
            if consumption != nil {
                try eventually("(try? Self.requestRow(service))?.state == \"skipped\"", within: 20) {
                    (try? Self.requestRow(service))?.state == "skipped"
                }
                #expect(try Self.requestRow(service)?.error?.contains("customerConsented") == true)
            } else {
                // No app answers consumption: no responder runs, there is no round to wait for.
                #expect(service.app.jobs.running(named: ConsumptionResponder.leaseName) == nil)
                #expect(
                    try Self.requestRow(service)?.state == "pending",
                    "kept: a config with consent may still answer in time")
            }
            #expect(Self.consumptionCalls(apple).isEmpty)
            #expect(try Self.answers(service).isEmpty)
        }
    }
}
