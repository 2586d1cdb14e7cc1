import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import AppStore
@testable import TestStore

/// The Server API client over real HTTP against the stand-in (which checks every token as Apple
/// does). Waits are recorded by the injected sleep, never spent, so nothing here is timed.
@Suite struct AppStoreServerClientTests {
    static let key = AppStoreServerKey.testKey()

    final class Sleeps: Sendable {
        let waits = Mutex<[Double]>([])
        var recorded: [Double] { waits.withLock { $0 } }
        var sleep: @Sendable (Double) -> Void { { seconds in self.waits.withLock { $0.append(seconds) } } }
    }

    static func client(
        _ apple: AppleServerAPIStandIn, key: AppStoreServerKey = key, sleeps: Sleeps = Sleeps(),
        policy: AppStoreServerClient.Policy = .init(timeoutSeconds: 5, maxRetries: 3, backoffSeconds: 0.5)
    ) -> AppStoreServerClient {
        AppStoreServerClient(
            key: key, bundleId: TestVectors.bundleId, productionURL: apple.productionURL, sandboxURL: apple.sandboxURL,
            policy: policy, sleep: sleeps.sleep)
    }

    /// The client's typed error (any other error is a test failure, as is none when one is expected).
    static func error(_ body: () throws -> Void) -> AppStoreServerError? {
        do {
            try body()
            return nil
        } catch let error as AppStoreServerError { return error } catch {
            Issue.record("untyped error \(error)")
            return nil
        }
    }

    static func transaction(_ fields: [String: JSONValue] = [:]) -> String {
        TestVectors.shared.signedTransaction(["appTransactionId": "customer-1"].merging(fields) { $1 })
    }

    @Test func fortyFiveTransactionsOverThreePagesInOrder() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        apple.production.setPageSizes(history: 20)
        let signed = (0..<45).map { _ in Self.transaction(["environment": "Production"]) }
        for jws in signed { apple.production.addTransaction(jws) }
        apple.production.addTransaction(TestVectors.shared.signedTransaction(["appTransactionId": "someone-else"]))
        let id = try #require(AppStoreServerAPIStandIn.payload(signed[17])?.string("transactionId"))

        let history = try Self.client(apple).transactionHistory(id)
        #expect(history.signedTransactions == signed)
        #expect(history.pages == 3)
        #expect(history.environment == .production)
        let requests = apple.production.requests
        #expect(requests.map(\.path) == Array(repeating: "/inApps/v2/history/\(id)", count: 3))
        #expect(requests.map { $0.query["revision"] } == [nil, "rev-20", "rev-40"])
        #expect(requests.allSatisfy { $0.status == 200 })
        #expect(apple.sandbox.requests.isEmpty)
    }

    /// Apple asks for a fresh token per request: each one is issued at the clock's time then.
    @Test func everyRequestCarriesAFreshToken() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        apple.production.setPageSizes(history: 1)
        let signed = (0..<3).map { _ in Self.transaction() }
        for jws in signed { apple.production.addTransaction(jws) }
        let id = try #require(AppStoreServerAPIStandIn.payload(signed[0])?.string("transactionId"))
        let ticks = Mutex<Int64>(0)
        let start = TestVectors.nowMillis
        let client = AppStoreServerClient(
            key: Self.key, bundleId: TestVectors.bundleId, productionURL: apple.productionURL,
            sandboxURL: apple.sandboxURL,
            clock: {
                start + ticks.withLock {
                    $0 += 1
                    return $0
                } * 1000
            })
        _ = try client.transactionHistory(id)
        let issued = try apple.production.requests.map { request -> Int64 in
            let token = try #require(request.authorization?.dropFirst("Bearer ".count))
            let claims = try #require(AppStoreServerAPIStandIn.payload(String(token)))
            return try #require(claims["iat"]?.int64Value)
        }
        #expect(issued == [1, 2, 3].map { (start + $0 * 1000) / 1000 })
    }

    @Test func historyFiltersAreSentWithEveryPage() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        apple.production.setPageSizes(history: 1)
        let signed = (0..<2).map { _ in Self.transaction() }
        for jws in signed { apple.production.addTransaction(jws) }
        let id = try #require(AppStoreServerAPIStandIn.payload(signed[0])?.string("transactionId"))
        let query = TransactionHistoryQuery(productIds: ["com.example.monthly"], sort: "ASCENDING", revoked: false)
        let history = try Self.client(apple).transactionHistory(id, query: query)
        #expect(history.signedTransactions == signed)
        for request in apple.production.requests {
            #expect(request.query["productId"] == "com.example.monthly")
            #expect(request.query["sort"] == "ASCENDING")
            #expect(request.query["revoked"] == "false")
        }
    }

    @Test func productionNotFoundGoesToSandbox() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        let jws = Self.transaction()
        apple.sandbox.addTransaction(jws)
        let id = try #require(AppStoreServerAPIStandIn.payload(jws)?.string("transactionId"))
        let client = Self.client(apple)

        let history = try client.transactionHistory(id)
        #expect(history.environment == .sandbox)
        #expect(history.signedTransactions == [jws])
        #expect(apple.production.requests.map(\.status) == [404])
        #expect(try client.transactionInfo(id) == TransactionInfo(environment: .sandbox, signedTransactionInfo: jws))

        // Unknown in both: Apple's error, typed.
        #expect(
            Self.error { _ = try client.transactionInfo("999") }
                == .rejected(status: 404, errorCode: 4_040_010, errorMessage: "Transaction id not found."))
        // Told the environment, it asks only there.
        #expect(
            Self.error { _ = try client.transactionInfo(id, environment: .production) }?.appleErrorCode == 4_040_010)
    }

    @Test func tooManyRequestsWaitsForRetryAfter() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        let jws = Self.transaction()
        apple.production.addTransaction(jws)
        let id = try #require(AppStoreServerAPIStandIn.payload(jws)?.string("transactionId"))
        apple.production.enqueue([.tooManyRequests(retryAfterSeconds: 7), .tooManyRequests(retryAfterSeconds: nil)])
        let sleeps = Sleeps()
        let info = try Self.client(apple, sleeps: sleeps).transactionInfo(id)
        #expect(info.signedTransactionInfo == jws)
        #expect(apple.production.requests.map(\.status) == [429, 429, 200])
        // At least what Apple asked for; without a header, the backoff.
        #expect(sleeps.recorded.count == 2)
        #expect(sleeps.recorded[0] >= 7)
        #expect(sleeps.recorded[1] > 0)
    }

    @Test func aRetryAfterBeyondTheBoundIsNotWaitedFor() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        apple.production.enqueue([.tooManyRequests(retryAfterSeconds: 3600)])
        let sleeps = Sleeps()
        let error = Self.error { _ = try Self.client(apple, sleeps: sleeps).transactionInfo("1") }
        guard case .unavailable = error else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        #expect(sleeps.recorded.isEmpty)
        #expect(apple.production.requests.count == 1)
    }

    @Test func serverErrorsAreRetriedThenUnavailable() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        apple.production.enqueue(Array(repeating: .serverError(status: 500), count: 3) + [.serverError(status: 503)])
        let sleeps = Sleeps()
        let error = Self.error { _ = try Self.client(apple, sleeps: sleeps).transactionHistory("1") }
        guard case .unavailable(let detail) = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        #expect(detail.contains("after 4 attempts"))
        #expect(apple.production.requests.map(\.status) == [500, 500, 500, 503])
        #expect(sleeps.recorded == [0.5, 1, 2])
        #expect(apple.sandbox.requests.isEmpty)

        // A 5xx that recovers within the bound is just an answer.
        let jws = Self.transaction()
        apple.production.addTransaction(jws)
        let id = try #require(AppStoreServerAPIStandIn.payload(jws)?.string("transactionId"))
        apple.production.enqueue([.serverError(status: 502)])
        #expect(try Self.client(apple).transactionInfo(id).signedTransactionInfo == jws)
    }

    @Test func timeoutsAreRetriedThenUnavailable() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        defer { apple.stop() }
        apple.production.enqueue([.hang, .hang])
        let sleeps = Sleeps()
        let client = Self.client(
            apple, sleeps: sleeps, policy: .init(timeoutSeconds: 2, maxRetries: 1, backoffSeconds: 0.25))
        let error = Self.error { _ = try client.transactionInfo("1") }
        guard case .unavailable = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        // The retry is proven by its backoff: one sleep, then a second attempt. How many of the two
        // the stand-in saw is not: on a loaded machine a timed-out attempt can end before the
        // stand-in has read it (seen once in a release run while builds shared the cores).
        #expect(sleeps.recorded == [0.25])
        #expect((1...2).contains(apple.production.requests.count))
    }

    @Test func applesErrorBodiesAreTyped() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        apple.production.enqueue([
            .raw(status: 400, body: #"{"errorCode":4000006,"errorMessage":"Invalid transaction id."}"#)
        ])
        let client = Self.client(apple)
        #expect(
            Self.error { _ = try client.transactionInfo("1") }
                == .rejected(status: 400, errorCode: 4_000_006, errorMessage: "Invalid transaction id."))
        // A 4xx without Apple's body is still typed, without a code.
        apple.production.enqueue([.raw(status: 403, body: "forbidden")])
        #expect(
            Self.error { _ = try client.transactionInfo("1") }
                == .rejected(status: 403, errorCode: nil, errorMessage: nil))
        // Apple's retryable codes are retried.
        let jws = Self.transaction()
        apple.production.addTransaction(jws)
        let id = try #require(AppStoreServerAPIStandIn.payload(jws)?.string("transactionId"))
        apple.production.enqueue([.raw(status: 404, body: #"{"errorCode":4040006,"errorMessage":"retry"}"#)])
        #expect(try client.transactionInfo(id).signedTransactionInfo == jws)
        // Ids that cannot be Apple's never leave.
        let before = apple.production.requests.count
        #expect(
            Self.error { _ = try client.transactionInfo("../notifications/test") }.map {
                if case .invalidArgument = $0 { true } else { false }
            } == true)
        #expect(apple.production.requests.count == before)
    }

    @Test func malformedAnswersAreTyped() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        let client = Self.client(apple)
        let cases: [String] = [
            "<html>oops</html>", "[]", #"{"hasMore":false}"#, #"{"hasMore":true,"signedTransactions":[]}"#,
            #"{"hasMore":false,"signedTransactions":[1]}"#,
        ]
        for body in cases {
            apple.production.enqueue([.raw(status: 200, body: body)])
            let error = Self.error { _ = try client.transactionHistory("1") }
            guard case .malformedResponse = error else {
                Issue.record("\(body): got \(String(describing: error))")
                continue
            }
        }
        apple.production.enqueue([.raw(status: 200, body: #"{"signedTransactionInfo":42}"#)])
        guard case .malformedResponse = Self.error({ _ = try client.transactionInfo("1") }) else {
            Issue.record("transaction info not a string")
            return
        }
    }

    @Test func theStandInRefusesOtherKeysOverHTTP() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        let jws = Self.transaction()
        apple.production.addTransaction(jws)
        let id = try #require(AppStoreServerAPIStandIn.payload(jws)?.string("transactionId"))
        // Same key, another key id: Apple cannot find the key, 401 (not retried, never sent to Sandbox).
        let wrongKid = AppStoreServerKey.testKey(issuerId: Self.key.issuerId, keyId: "OTHERKEY99")
        #expect(
            Self.error { _ = try Self.client(apple, key: wrongKid).transactionInfo(id) }
                == .rejected(status: 401, errorCode: nil, errorMessage: nil))
        let wrongIssuer = AppStoreServerKey.testKey(issuerId: "other-issuer", keyId: Self.key.keyId)
        #expect(
            Self.error { _ = try Self.client(apple, key: wrongIssuer).transactionInfo(id) }?.description.contains("401")
                == true)
        // A client for another bundle id.
        let other = AppStoreServerClient(
            key: Self.key, bundleId: "com.example.other", productionURL: apple.productionURL,
            sandboxURL: apple.sandboxURL)
        #expect(
            Self.error { _ = try other.transactionInfo(id) }
                == .rejected(status: 401, errorCode: nil, errorMessage: nil))
        // A clock an hour behind makes expired tokens.
        let late = AppStoreServerClient(
            key: Self.key, bundleId: TestVectors.bundleId, productionURL: apple.productionURL,
            sandboxURL: apple.sandboxURL, clock: { Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000 })
        #expect(
            Self.error { _ = try late.transactionInfo(id) } == .rejected(status: 401, errorCode: nil, errorMessage: nil)
        )
        #expect(apple.production.requests.map(\.status) == [401, 401, 401, 401])
        #expect(apple.sandbox.requests.isEmpty)
        // The control: the right client is answered.
        #expect(try Self.client(apple).transactionInfo(id).signedTransactionInfo == jws)
    }

    @Test func theStandInChecksTokensAsApple() throws {
        let standIn = try AppStoreServerAPIStandIn(
            environment: .production, bundleId: "com.example", issuerId: Self.key.issuerId, keyId: Self.key.keyId,
            publicKeyPEM: Self.key.publicKeyPEM)
        let now: Int64 = 1_767_000_000_000
        func status(_ token: String?) -> Int {
            standIn.answer(
                method: "GET", path: "/inApps/v1/transactions/1", query: [:],
                authorization: token.map { "Bearer " + $0 }, body: [], nowMillis: now
            ).status
        }
        func forge(_ claims: JSONValue, kid: String = Self.key.keyId) -> String {
            Self.key.signer.sign(
                payload: claims.serialized(), header: Array(#"{"alg":"ES256","kid":"\#(kid)","typ":"JWT"}"#.utf8))
        }
        let good: [String: JSONValue] = [
            "iss": .string(Self.key.issuerId), "iat": .int(now / 1000), "exp": .int(now / 1000 + 300),
            "aud": "appstoreconnect-v1", "bid": "com.example",
        ]
        #expect(status(forge(.object(good))) == 404)  // accepted: then "not found"
        #expect(status(nil) == 401)
        #expect(status(forge(.object(good.merging(["aud": "appstoreconnect-v2"]) { $1 }))) == 401)
        #expect(status(forge(.object(good), kid: "OTHERKEY99")) == 401)
        #expect(
            status(forge(.object(good.merging(["iat": .int(now / 1000 - 600), "exp": .int(now / 1000 - 1)]) { $1 })))
                == 401)
        #expect(status(forge(.object(good.merging(["exp": .int(now / 1000 + 3601)]) { $1 }))) == 401)
    }

    @Test func subscriptionStatusesNotificationHistoryAndTheRest() throws {
        let apple = try AppleServerAPIStandIn(key: Self.key)
        let standIn = apple.production
        let first = Self.transaction(["originalTransactionId": "7000000001", "transactionId": "7000000001"])
        let renewal = Self.transaction([
            "originalTransactionId": "7000000001", "transactionId": "7000000002",
            "purchaseDate": .int(TestVectors.nowMillis),
        ])
        standIn.addTransaction(first)
        standIn.addTransaction(renewal)
        let info = TestVectors.shared.signedRenewalInfo(["originalTransactionId": "7000000001"])
        standIn.addRenewalInfo(info, status: 4)
        let client = Self.client(apple)

        let statuses = try client.allSubscriptionStatuses("7000000001")
        #expect(statuses.environment == .production)
        #expect(
            statuses.items == [
                .init(
                    subscriptionGroupIdentifier: "21000001", originalTransactionId: "7000000001", status: 4,
                    signedTransactionInfo: renewal, signedRenewalInfo: info)
            ])

        // Notification history: two pages of 2 + 1, the same query with each token.
        standIn.setPageSizes(notifications: 2)
        let now = TestVectors.nowMillis
        let sent = (0..<3).map { _ in TestVectors.shared.signedNotification(type: "DID_RENEW") }
        for (index, payload) in sent.enumerated() {
            standIn.addNotification(
                payload,
                sendAttempts: [SendAttempt(attemptDate: now, sendAttemptResult: index == 1 ? "SUCCESS" : "TIMED_OUT")])
        }
        let query = NotificationHistoryQuery(startDate: now - 3_600_000, endDate: now + 3_600_000)
        let page1 = try client.notificationHistory(query, environment: .production)
        #expect(page1.items.map(\.signedPayload) == Array(sent.prefix(2)))
        #expect(page1.hasMore)
        let page2 = try client.notificationHistory(
            query, paginationToken: page1.paginationToken, environment: .production)
        #expect(page2.items.map(\.signedPayload) == [sent[2]])
        #expect(!page2.hasMore)
        #expect(page2.items[0].sendAttempts == [SendAttempt(attemptDate: now, sendAttemptResult: "TIMED_OUT")])
        let failures = try client.notificationHistory(
            NotificationHistoryQuery(startDate: now - 3_600_000, endDate: now + 3_600_000, onlyFailures: true),
            environment: .production)
        #expect(failures.items.count == 2)
        let body = try JSONValue.parse(standIn.requests.last { $0.path == "/inApps/v1/notifications/history" }!.body)
        #expect(body["onlyFailures"] == true)
        #expect(body["startDate"]?.int64Value == now - 3_600_000)

        // Consumption (v2): the body Apple gets, and 202.
        try client.sendConsumptionInformation(
            "7000000002",
            ConsumptionInformation(
                customerConsented: true, sampleContentProvided: false, deliveryStatus: "DELIVERED",
                consumptionPercentage: 30_000, refundPreference: "DECLINE"))
        let consumption = try #require(standIn.requests.last)
        #expect(consumption.method == "PUT")
        #expect(consumption.path == "/inApps/v2/transactions/consumption/7000000002")
        #expect(consumption.status == 202)
        #expect(
            try JSONValue.parse(consumption.body) == [
                "customerConsented": true, "sampleContentProvided": false, "deliveryStatus": "DELIVERED",
                "consumptionPercentage": 30000, "refundPreference": "DECLINE",
            ])

        // Test notification and its status.
        let token = try client.requestTestNotification(environment: .production)
        #expect(standIn.testNotificationTokens == [token])
        #expect(
            try client.testNotificationStatus(token, environment: .production)
                == TestNotificationStatus(signedPayload: nil, sendAttempts: []))
        standIn.setTestNotificationStatus(
            token, .init(signedPayload: "x.y.z", sendAttempts: [.init(attemptDate: now, sendAttemptResult: "SUCCESS")]))
        #expect(
            try client.testNotificationStatus(token, environment: .production).sendAttempts.map(\.sendAttemptResult)
                == ["SUCCESS"])
        #expect(
            Self.error { _ = try client.testNotificationStatus("unknown-token", environment: .production) }?
                .appleErrorCode == 4_040_008)

        // Extend a renewal date.
        let extended = try client.extendRenewalDate(
            "7000000001", RenewalDateExtension(extendByDays: 3, extendReasonCode: 1, requestIdentifier: "req-1"))
        #expect(extended.success)
        #expect(extended.environment == .production)
        #expect(extended.originalTransactionId == "7000000001")
        #expect(
            try JSONValue.parse(standIn.requests.last!.body) == [
                "extendByDays": 3, "extendReasonCode": 1, "requestIdentifier": "req-1",
            ])
        #expect(
            Self.error {
                _ = try client.extendRenewalDate(
                    "1", RenewalDateExtension(extendByDays: 91, extendReasonCode: 1, requestIdentifier: "r"))
            }
            .map { if case .invalidArgument = $0 { true } else { false } } == true)
    }
}
