import EventStore
import Foundation
import JSON
import Ledger
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// `POST /v1/apple/retention-message` (api.md §8) over real HTTP: Apple's signed realtime request
/// in, Apple's `RealtimeResponseBody` out, chosen by the app's first matching rule; every request
/// recorded on the chain and shown in `analytics.retention_requests` with whether it renewed.
@Suite(.tags(.database)) struct RetentionMessageTests {
    static let m1 = "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890"
    static let m2 = "b2c3d4e5-f6a7-4901-b2c3-d4e5f6a78901"
    static let m3 = "c3d4e5f6-a789-4123-c3d4-e5f6a7890123"

    /// 0: the yearly plan → a promotional offer; 1: German speakers → the yearly plan instead;
    /// 2: six months or more → a thank-you message; 3: fr-FR on the monthly → the yearly, no message.
    static func configuration() -> Configuration {
        var configuration = TestService.configuration()
        configuration.apps[0].retention = RetentionRules(rules: [
            .init(
                productId: TestService.yearly, locale: nil, minTenureMonths: nil,
                action: .promotionalOffer(offerId: "stay50", messageId: m3)),
            .init(
                productId: nil, locale: "de", minTenureMonths: nil,
                action: .alternateProduct(productId: TestService.yearly, messageId: m2)),
            .init(productId: nil, locale: nil, minTenureMonths: 6, action: .message(messageId: m1)),
            .init(
                productId: TestService.monthly, locale: "fr-FR", minTenureMonths: nil,
                action: .alternateProduct(productId: TestService.yearly, messageId: nil)),
        ])
        return configuration
    }

    static func start() throws -> TestService {
        try TestService(configuration: configuration(), offerSigners: OfferRoutesTests.signers([TestService.bundleId]))
    }

    /// Apple's `DecodedRealtimeRequestBody`, signed with the test PKI.
    static func request(
        chain: String, product: String, locale: String, signed: Int64, id: String = UUID().uuidString,
        environment: String = "Sandbox", appAppleId: Int64 = TestVectors.appAppleId
    ) -> String {
        Mint.vectors.sign(
            .object([
                "originalTransactionId": .string(chain), "appAppleId": .int(appAppleId), "productId": .string(product),
                "userLocale": .string(locale), "requestIdentifier": .string(id), "signedDate": .int(signed),
                "environment": .string(environment),
            ]))
    }

    static func ask(_ api: ServiceHTTPClient, _ signedPayload: String) throws -> HTTPTestConnection.Response {
        try api.post(
            "/v1/apple/retention-message", .object(["signedPayload": .string(signedPayload)]), apiKey: .some(nil))
    }

    static func recorded(_ service: TestService) throws -> (events: String?, rows: String?) {
        let c = try Connection(service.conninfo)
        return (
            try AnalyticsTests.scalar(c, "SELECT count(*) FROM es.events WHERE type = 'RetentionRequestAnswered'"),
            try AnalyticsTests.scalar(c, "SELECT count(*) FROM apple.retention_requests")
        )
    }

    /// Chain 3100001 bought 200 days ago (tenure 6: 7 months would be ≥ 212 days), chain 3100002
    /// 40 days ago (tenure 1: 2 months would be ≥ 59 days).
    static func purchaseChains(_ api: ServiceHTTPClient, now: Int64) throws {
        let a = Mint.transaction(
            "3100001", product: TestService.monthly, purchase: now - 200 * day,
            expires: now + 10 * day, signed: now - 200 * day)
        let b = Mint.transaction(
            "3100002", product: TestService.monthly, purchase: now - 40 * day,
            expires: now - 10 * day, signed: now - 40 * day)
        #expect(try api.purchase("u-a", Mint.signed(a)).status == 200)
        #expect(try api.purchase("u-b", Mint.signed(b)).status == 200)
    }

    @Test func eachRuleKindGetsApplesExactAnswerAndNoMatchGetsTheEmptyOne() throws {
        let service = try Self.start()
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        try Self.purchaseChains(api, now: now)

        let none = try Self.ask(
            api,
            Self.request(chain: "3100002", product: TestService.monthly, locale: "en-US", signed: now - 60 * second))
        #expect(none.status == 200, "\(none.text)")
        #expect(none.text == "{}", "tenure 1, monthly, en-US: no rule")

        let message = try Self.ask(
            api,
            Self.request(chain: "3100001", product: TestService.monthly, locale: "en-US", signed: now - 59 * second))
        #expect(message.text == #"{"message":{"messageIdentifier":"\#(Self.m1.uppercased())"}}"#, "\(message.text)")

        let alternate = try Self.ask(
            api,
            Self.request(chain: "3100002", product: TestService.monthly, locale: "de-DE", signed: now - 58 * second))
        #expect(
            alternate.text
                == #"{"alternateProduct":{"messageIdentifier":"\#(Self.m2.uppercased())","productId":"\#(TestService.yearly)"}}"#,
            "\(alternate.text)")

        let offer = try Self.ask(
            api, Self.request(chain: "3100002", product: TestService.yearly, locale: "en-US", signed: now - 57 * second)
        )
        #expect(offer.status == 200, "\(offer.text)")
        let promotional = try #require(offer.json["promotionalOffer"]?.objectValue, "\(offer.text)")
        #expect(Set(promotional.keys) == ["messageIdentifier", "promotionalOfferSignatureV2"])
        #expect(offer.json.objectValue?.count == 1)
        #expect(promotional["messageIdentifier"]?.stringValue == Self.m3.uppercased())
        let jws = try #require(promotional["promotionalOfferSignatureV2"]?.stringValue)
        #expect(try OpenSSLCommandLine.verifiesJWS(jws))
        let claims = try OfferRoutesTests().claims(jws)
        #expect(claims["productId"]?.stringValue == TestService.yearly)
        #expect(claims["offerIdentifier"]?.stringValue == "stay50")
        #expect(claims["transactionId"]?.stringValue == "3100002")
        #expect(claims["bid"]?.stringValue == TestService.bundleId)
        #expect(claims["aud"]?.stringValue == "promotional-offer")

        // A chain the ledger never saw: tenure 0; fr_FR is fr-FR; no messageId, no messageIdentifier.
        let unknown = try Self.ask(
            api,
            Self.request(chain: "3199999", product: TestService.monthly, locale: "fr_FR", signed: now - 56 * second))
        #expect(unknown.text == #"{"alternateProduct":{"productId":"\#(TestService.yearly)"}}"#, "\(unknown.text)")

        let c = try Connection(service.conninfo)
        let rows = try AnalyticsTests.scalar(
            c,
            """
            SELECT string_agg(original_transaction_id || ' ' || coalesce(rule_index::text, '-') || ' ' || answer_kind
                              || ' ' || tenure_months || ' ' || coalesce(offer_identifier, answer_product_id, message_identifier, '-'),
                              ',' ORDER BY requested_at)
            FROM apple.retention_requests
            """)
        #expect(
            rows
                == [
                    "3100002 - none 1 -", "3100001 2 message 6 \(Self.m1)",
                    "3100002 1 alternateProduct 1 \(TestService.yearly)",
                    "3100002 0 promotionalOffer 1 stay50", "3199999 3 alternateProduct 0 \(TestService.yearly)",
                ].joined(separator: ","))
        #expect(try Self.recorded(service) == ("5", "5"))
    }

    @Test func aForgedUnsignedOrForeignRequestIsRefusedAndNothingIsRecorded() throws {
        let service = try Self.start()
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        let fields: JSONValue = .object([
            "originalTransactionId": "3100001", "appAppleId": .int(TestVectors.appAppleId),
            "productId": .string(TestService.monthly), "userLocale": "en-US",
            "requestIdentifier": .string(UUID().uuidString), "signedDate": .int(now), "environment": "Sandbox",
        ])
        let forged = try FirstHourTrapsTests.foreignSigner().sign(payload: fields.serialized())
        let refusals: [(String, String)] = [
            (forged, "verification_failed"),
            ("not-a-jws", "verification_failed"),
            // Production names appAppleId 9999, not the app's 1234 (Apple: INVALID_APP_IDENTIFIER).
            (
                Self.request(
                    chain: "3100001", product: TestService.monthly, locale: "en-US", signed: now,
                    environment: "Production", appAppleId: 9999), "unknown_app"
            ),
            // Xcode is not an environment this app accepts (Apple: INVALID_ENVIRONMENT).
            (
                Self.request(
                    chain: "3100001", product: TestService.monthly, locale: "en-US", signed: now,
                    environment: "Xcode"), "wrong_environment"
            ),
        ]
        for (payload, expected) in refusals {
            let response = try Self.ask(api, payload)
            #expect(response.status == 422, "\(response.text)")
            if expected != "verification_failed" {
                #expect(response.json["reason"]?.stringValue == expected, "\(response.text)")
            }
        }
        let empty = try api.post("/v1/apple/retention-message", .object([:]), apiKey: .some(nil))
        #expect(empty.status == 400)
        #expect(try Self.recorded(service) == ("0", "0"))
        // The app's own Production appAppleId gets in.
        let production = try Self.ask(
            api,
            Self.request(
                chain: "3100001", product: TestService.monthly, locale: "en-US", signed: now, environment: "Production")
        )
        #expect(production.status == 200, "\(production.text)")
        #expect(try Self.recorded(service) == ("1", "1"))
    }

    /// An answer Apple asks again for (same requestIdentifier) is the same answer, recorded once.
    @Test func aRetriedRequestIsAnsweredAgainAndRecordedOnce() throws {
        let service = try Self.start()
        defer { service.stop() }
        let api = service.client()
        let payload = Self.request(
            chain: "3100009", product: TestService.monthly, locale: "de", signed: service.clock.now)
        let first = try Self.ask(api, payload)
        let second = try Self.ask(api, payload)
        #expect(first.status == 200 && first.text == second.text, "\(first.text) \(second.text)")
        #expect(try Self.recorded(service) == ("1", "1"))
    }

    @Test func theViewShowsWhoRenewedAfterTheRequestAndReplayKeepsTheRecords() throws {
        let service = try Self.start()
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        try Self.purchaseChains(api, now: now)
        // The feed names users by subject (ChangeSealing).
        let feed = """
            SELECT count(*) FROM changes.feed f JOIN identity.subjects s ON s.subject = f.user_id
            WHERE s.user_id IN ('u-a', 'u-b')
            """
        #expect(try AnalyticsTests.scalar(try Connection(service.conninfo), feed) != "0")
        let announced = try AnalyticsTests.scalar(try Connection(service.conninfo), feed)
        for (chain, locale, at) in [
            ("3100001", "en-US", now - 60 * second), ("3100002", "de-DE", now - 59 * second),
            ("3199999", "en-US", now - 58 * second),
        ] {
            #expect(
                try Self.ask(api, Self.request(chain: chain, product: TestService.monthly, locale: locale, signed: at))
                    .status == 200)
        }
        // A request changes no one's entitlements: nothing is announced in the feed.
        #expect(try AnalyticsTests.scalar(try Connection(service.conninfo), feed) == announced)
        // Chain 3100002 renews after Apple asked; 3100001 does not.
        let renewal = Mint.transaction(
            "3100012", chain: "3100002", product: TestService.monthly, purchase: now - 5 * second,
            expires: now + 30 * day, signed: now - 4 * second, ["originalPurchaseDate": .int(now - 40 * day)])
        #expect(try api.notify(Mint.notification("DID_RENEW", transaction: renewal)).status == 200)

        let c = try Connection(service.conninfo)
        let funnel = """
            SELECT string_agg(original_transaction_id || ' ' || coalesce(rule_index::text, '-') || ' ' || answer_kind
                              || ' ' || renewed, ',' ORDER BY requested_at)
            FROM analytics.retention_requests
            """
        let expected = "3100001 2 message false,3100002 1 alternateProduct true,3199999 - none false"
        try eventually("\(String(describing: try? AnalyticsTests.scalar(c, funnel)))", within: 30) {
            (try? AnalyticsTests.scalar(c, funnel)) == expected
        }
        let renewedAt = try AnalyticsTests.scalar(
            c,
            """
            SELECT (extract(epoch FROM renewed_at) * 1000)::bigint FROM analytics.retention_requests
            WHERE original_transaction_id = '3100002'
            """)
        #expect(renewedAt == String(now - 5 * second))

        // Apple asking about a chain the ledger never saw records the request, not a chain.
        #expect(try api.get("/v1/subscriptions/3199999").status == 404)
        let dry = try api.post("/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(dry.status == 200 && dry.json["changedUserCount"]?.int64Value == 0, "\(dry.text)")
        // A replay (users and analytics rebuilt from the log) keeps every record and the funnel.
        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200, "\(replay.text)")
        try eventually("\(String(describing: try? AnalyticsTests.scalar(c, funnel)))", within: 30) {
            (try? AnalyticsTests.scalar(c, funnel)) == expected
        }
        #expect(try Self.recorded(service) == ("3", "3"))
        #expect(try api.get("/v1/subscriptions/3100002").status == 200)
    }

    /// Not a pass/fail figure (a shared 2-core machine): how long an answer takes end to end
    /// over local HTTP, reported in the test log. Every answer must still be a 200.
    @Test func answersFastLocally() throws {
        let service = try Self.start()
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        try Self.purchaseChains(api, now: now)
        var millis: [Double] = []
        for index in 0..<200 {
            let payload = Self.request(
                chain: index % 2 == 0 ? "3100001" : "3100002",
                product: index % 3 == 0 ? TestService.yearly : TestService.monthly,
                locale: "en-US", signed: now - Int64(index))
            let start = DispatchTime.now().uptimeNanoseconds
            let response = try Self.ask(api, payload)
            millis.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            #expect(response.status == 200, "\(response.text)")
        }
        millis.sort()
        print(
            "retention-message latency over 200 local requests: p50 \(millis[99]) ms, p99 \(millis[197]) ms, max \(millis[199]) ms"
        )
        #expect(try Self.recorded(service) == ("200", "200"))
    }
}
