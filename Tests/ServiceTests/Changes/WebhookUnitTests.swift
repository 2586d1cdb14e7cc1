import AppStore
import Foundation
import Ledger
import Testing

@testable import Changes
@testable import Infrastructure
@testable import Service

/// Shared values of the webhook suites.
enum WebhookTests {
    /// The Standard Webhooks specification's example secret (24 bytes after `whsec_`).
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
}

@Suite struct WebhookSignatureTests {
    /// The published Standard Webhooks test vector (the spec's and every reference library's).
    @Test func theStandardWebhooksTestVectorReproduces() throws {
        let key = try #require(WebhookEndpoint.key(ofSecret: WebhookTests.secret))
        let signature = WebhookSignature.sign(
            key: key, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func headersCarryTheIdTheTimestampAndTheSignatureOfBoth() throws {
        let key = try #require(WebhookEndpoint.key(ofSecret: WebhookTests.secret))
        let body = Array(#"{"id":"chg_000000000000007"}"#.utf8)
        let headers = WebhookSignature.headers(
            key: key, id: "chg_000000000000007", timestamp: 1_800_000_000, body: body)
        #expect(headers["webhook-id"] == "chg_000000000000007")
        #expect(headers["webhook-timestamp"] == "1800000000")
        #expect(
            headers["webhook-signature"]
                == WebhookSignature.sign(key: key, id: "chg_000000000000007", timestamp: 1_800_000_000, body: body))
        #expect(
            headers["webhook-signature"]
                != WebhookSignature.sign(key: key, id: "chg_000000000000007", timestamp: 1_800_000_001, body: body))
    }
}

@Suite struct WebhookConfigurationTests {
    static func parse(_ text: String) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(Array(text.utf8), file: "/etc/iap/config.json", baseDirectory: "/nonexistent")
    }

    @Test func theContractsShapeLoadsWithItsDefaults() throws {
        let configuration = try Self.parse(
            #"""
            {"webhooks": [
              {"name": "backend", "url": "https://hooks.example.com/iap", "secret": "\#(WebhookTests.secret)",
               "environments": ["Production"], "types": null, "timeoutSeconds": 10, "retrySchedule": [5, 30, 120, 600, 3600, 21600]},
              {"name": "analytics", "url": "http://10.0.0.7:8080/in", "secret": "\#(WebhookTests.secret)",
               "types": ["RENEWAL", "EXPIRATION"]}
            ]}
            """#)
        #expect(configuration.webhooks.count == 2)
        let backend = configuration.webhooks[0]
        #expect(backend.environments == ["Production"])
        #expect(backend.types == nil)
        #expect(backend.key.count == 24)
        let analytics = configuration.webhooks[1]
        #expect(analytics.environments == nil)
        #expect(analytics.types == ["RENEWAL", "EXPIRATION"])
        #expect(analytics.timeoutSeconds == 10)
        #expect(analytics.retrySchedule == [5, 30, 120, 600, 3600, 21600])
        // A change with no environment goes to every endpoint, whatever its filter.
        #expect(backend.accepts(type: "BALANCE_DEBIT", environment: nil))
        #expect(backend.accepts(type: "RENEWAL", environment: "Production"))
        #expect(!backend.accepts(type: "RENEWAL", environment: "Sandbox"))
        #expect(!analytics.accepts(type: "BALANCE_DEBIT", environment: nil))
        #expect(try Self.parse("{}").webhooks.isEmpty)
    }

    static let ok = #""url": "https://h.example/x", "secret": "\#(WebhookTests.secret)""#

    @Test(arguments: [
        (#"{"webhooks": {}}"#, "webhooks", "expected an array"),
        (
            #"{"webhooks": [{"url": "https://h.example/x", "secret": "\#(WebhookTests.secret)"}]}"#, "webhooks[0].name",
            "is required"
        ),
        (#"{"webhooks": [{"name": "", \#(ok)}]}"#, "webhooks[0].name", "must not be empty"),
        (#"{"webhooks": [{"name": "a b", \#(ok)}]}"#, "webhooks[0].name", "letters"),
        (#"{"webhooks": [{"name": "a", \#(ok)}, {"name": "a", \#(ok)}]}"#, "webhooks[1].name", "configured twice"),
        (#"{"webhooks": [{"name": "a", "secret": "\#(WebhookTests.secret)"}]}"#, "webhooks[0].url", "is required"),
        (
            #"{"webhooks": [{"name": "a", "url": "ftp://h/x", "secret": "\#(WebhookTests.secret)"}]}"#,
            "webhooks[0].url", "http(s) URL"
        ),
        (
            #"{"webhooks": [{"name": "a", "url": "https://", "secret": "\#(WebhookTests.secret)"}]}"#,
            "webhooks[0].url", "with a host"
        ),
        (
            #"{"webhooks": [{"name": "a", "url": "not a url", "secret": "\#(WebhookTests.secret)"}]}"#,
            "webhooks[0].url", "http(s) URL"
        ),
        (#"{"webhooks": [{"name": "a", "url": "https://h/x"}]}"#, "webhooks[0].secret", "is required"),
        (#"{"webhooks": [{"name": "a", "url": "https://h/x", "secret": ""}]}"#, "webhooks[0].secret", "non-empty"),
        (
            #"{"webhooks": [{"name": "a", "url": "https://h/x", "secret": "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}]}"#,
            "webhooks[0].secret", "whsec_"
        ),
        (
            #"{"webhooks": [{"name": "a", "url": "https://h/x", "secret": "whsec_not*base64!"}]}"#,
            "webhooks[0].secret", "not base64"
        ),
        (
            #"{"webhooks": [{"name": "a", "url": "https://h/x", "secret": "whsec_c2hvcnQ="}]}"#, "webhooks[0].secret",
            "at least 16"
        ),
        (
            #"{"webhooks": [{"name": "a", \#(ok), "types": ["RENEWED"]}]}"#, "webhooks[0].types[0]",
            "unknown change type"
        ),
        (#"{"webhooks": [{"name": "a", \#(ok), "types": []}]}"#, "webhooks[0].types", "at least one"),
        (
            #"{"webhooks": [{"name": "a", \#(ok), "environments": ["Staging"]}]}"#, "webhooks[0].environments[0]",
            "unknown environment"
        ),
        (#"{"webhooks": [{"name": "a", \#(ok), "environments": []}]}"#, "webhooks[0].environments", "at least one"),
        (#"{"webhooks": [{"name": "a", \#(ok), "timeoutSeconds": 0}]}"#, "webhooks[0].timeoutSeconds", "seconds"),
        (#"{"webhooks": [{"name": "a", \#(ok), "timeoutSeconds": -3}]}"#, "webhooks[0].timeoutSeconds", "seconds"),
        (#"{"webhooks": [{"name": "a", \#(ok), "retrySchedule": []}]}"#, "webhooks[0].retrySchedule", "at least one"),
        (
            #"{"webhooks": [{"name": "a", \#(ok), "retrySchedule": [5, -1]}]}"#, "webhooks[0].retrySchedule[1]",
            "positive"
        ),
        (#"{"webhooks": [{"name": "a", \#(ok), "retry": [5]}]}"#, "webhooks[0].retry", "unknown key"),
    ])
    func aMistakeStopsStartUpNamingTheFileAndTheKey(text: String, key: String, words: String) {
        do {
            _ = try Self.parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.key == key, "\(error)")
            #expect(error.description.hasPrefix("/etc/iap/config.json: \(key): "), "\(error)")
            #expect(error.description.contains(words), "\(error)")
            // The secret is never repeated back (it would land in a terminal or a log).
            #expect(!error.description.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "\(error)")
            #expect(!error.description.contains("not*base64"), "\(error)")
        }
    }
}

extension WebhookConfigurationTests {
    /// A configuration built in code gets the same checks before serve starts anything.
    @Test func validateRefusesWhatParsingWould() {
        var configuration = Configuration.empty
        configuration.webhooks = [WebhookEndpoint(name: "a", url: "https://h/x", secret: "whsec_c2hvcnQ=")]
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        configuration.webhooks = [
            WebhookEndpoint(name: "a", url: "https://h/x", secret: WebhookTests.secret),
            WebhookEndpoint(name: "a", url: "https://h/y", secret: WebhookTests.secret),
        ]
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        configuration.webhooks = [WebhookEndpoint(name: "a", url: "https://h/x", secret: WebhookTests.secret)]
        #expect(throws: Never.self) { try configuration.validate() }
    }
}

@Suite struct WebhookPlannerTests {
    static let endpoint = WebhookEndpoint(
        name: "e", url: "http://h/x", secret: WebhookTests.secret, timeoutSeconds: 10, retrySchedule: [5, 30])

    static func open(_ seq: Int64, _ user: String?, failures: Int = 0, next: Int64 = 0) -> WebhookPlanner.Open {
        .init(
            seq: seq, cursor: FeedCursor(tx: UInt64(seq), seq: seq), userId: user, failures: failures,
            nextAttemptAt: next)
    }

    static func planner(random: Double = 0.5, maxInFlight: Int = 32) -> WebhookPlanner {
        WebhookPlanner(endpoint: endpoint, maxInFlight: maxInFlight, random: { random })
    }

    @Test func aUsersLaterChangeWaitsWhileAnEarlierOneIsOpenAndOtherUsersGoAhead() {
        var planner = Self.planner()
        let open = [Self.open(1, "u1"), Self.open(2, "u1"), Self.open(3, "u2"), Self.open(4, nil), Self.open(5, nil)]
        let first = planner.due(open, now: 1000)
        #expect(first.sends.map(\.seq) == [1, 3, 4, 5])
        // In flight: nothing more of theirs goes, and nothing is sent twice.
        #expect(planner.due(open, now: 1001).sends.isEmpty)
        // The first failed and waits for its retry: the second still waits behind it.
        let update = planner.completed(open[0], outcome: .response(status: 500), startedAt: 1000, now: 1100)
        #expect(update.status == .failed)
        let later = [Self.open(1, "u1", failures: 1, next: update.nextAttemptAt), Self.open(2, "u1")]
        let waiting = planner.due(later, now: 1200)
        #expect(waiting.sends.isEmpty)
        #expect(waiting.wakeAt == update.nextAttemptAt)
        #expect(planner.due(later, now: update.nextAttemptAt).sends.map(\.seq) == [1])
    }

    @Test func aDeadDeliveryNoLongerBlocks() {
        var planner = Self.planner()
        // The table lists open deliveries only: once 1 is dead, 2 is the user's first.
        #expect(planner.due([Self.open(2, "u1")], now: 0).sends.map(\.seq) == [2])
    }

    @Test func failuresFollowTheScheduleWithJitterThenDie() {
        for (random, factor) in [(0.0, 0.9), (0.5, 1.0), (0.999_999, 1.1)] {
            var planner = Self.planner(random: random)
            let first = planner.completed(
                Self.open(1, "u"), outcome: .error("connection refused"), startedAt: 0, now: 200)
            #expect(first.status == .failed && first.failures == 1)
            #expect(abs(Double(first.nextAttemptAt - 200) - 5000 * factor) < 2)
            let second = planner.completed(
                Self.open(1, "u", failures: 1), outcome: .response(status: 503), startedAt: 0, now: 200)
            #expect(second.status == .failed && second.failures == 2 && second.httpStatus == 503)
            #expect(abs(Double(second.nextAttemptAt - 200) - 30000 * factor) < 2)
            let third = planner.completed(
                Self.open(1, "u", failures: 2), outcome: .response(status: 503), startedAt: 0, now: 200)
            #expect(third.status == .dead && third.failures == 3)
        }
    }

    @Test func onlyA2xxWithinTheTimeoutDelivers() {
        var planner = Self.planner()
        #expect(
            planner.completed(Self.open(1, "u"), outcome: .response(status: 204), startedAt: 0, now: 9_000).status
                == .delivered)
        #expect(
            planner.completed(Self.open(1, "u"), outcome: .response(status: 200), startedAt: 0, now: 10_500).status
                == .failed)
        let redirect = planner.completed(Self.open(1, "u"), outcome: .response(status: 302), startedAt: 0, now: 10)
        #expect(redirect.status == .failed && redirect.error == "redirect not followed")
        #expect(
            planner.completed(Self.open(1, "u"), outcome: .response(status: 404), startedAt: 0, now: 10).status
                == .failed)
        #expect(
            planner.completed(Self.open(1, "u"), outcome: .error("timed out after 10 s"), startedAt: 0, now: 10).status
                == .failed)
    }

    @Test func anAbandonedSendComesUpAgain() {
        var planner = Self.planner()
        let open = [Self.open(1, "u1"), Self.open(2, "u1")]
        #expect(planner.due(open, now: 0).sends.map(\.seq) == [1])
        planner.abandon([1])
        #expect(planner.due(open, now: 0).sends.map(\.seq) == [1])
    }

    @Test func inFlightIsBoundedAcrossUsers() {
        var planner = Self.planner(maxInFlight: 3)
        let open = (1...10).map { Self.open(Int64($0), "u\($0)") }
        #expect(planner.due(open, now: 0).sends.map(\.seq) == [1, 2, 3])
        _ = planner.completed(open[1], outcome: .response(status: 200), startedAt: 0, now: 1)
        #expect(planner.due(Array(open[2...]), now: 1).sends.map(\.seq) == [4])
    }

    @Test func filtersPickTheChangesAnEndpointTakes() {
        var endpoint = Self.endpoint
        endpoint.environments = ["Production"]
        endpoint.types = ["RENEWAL", "BALANCE_DEBIT"]
        func change(_ seq: Int64, _ type: String, _ environment: String?) -> StoredChange {
            StoredChange(
                seq: seq, tx: 1, type: type, userId: "u", environment: environment, occurredAt: 0, recordedAt: 0,
                productId: nil, originalTransactionId: nil, transactionId: nil, entitlementIds: [], details: "{}",
                customer: "{}")
        }
        let page = [
            change(1, "RENEWAL", "Production"), change(2, "RENEWAL", "Sandbox"), change(3, "BALANCE_DEBIT", nil),
            change(4, "INITIAL_PURCHASE", "Production"), change(5, "RENEWAL", nil),
        ]
        #expect(WebhookPlanner.accepted(page, by: endpoint).map(\.seq) == [1, 3, 5])
    }
}
