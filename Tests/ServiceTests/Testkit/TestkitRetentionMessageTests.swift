import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service
@testable import TestStore

/// `testkit retention-message` (docs/testkit.md): Apple's Retention Messaging request minted by
/// the test store, signed by its CA, posted to serve's `POST /v1/apple/retention-message`, the
/// answer printed; the rules are those `testkit init` wrote (de → a promotional offer, fr → a
/// message, others none). Each request is counted in `iap_retention_requests_total`.
@Suite(.serialized, .tags(.database)) struct TestkitRetentionMessageTests {
    @Test func eachRuleOfTheTestStoresConfigAnswersAndIsCounted() throws {
        let world = try TestkitAppleTests.World()
        defer { world.stop() }
        let chain = "2000000001"
        #expect(try world.testkit(["purchase", "--user", "u-1", "--product", TestkitStore.subscription]).status == 0)
        func ask(_ extra: [String]) throws -> OpsBinary.Outcome {
            try world.testkit(["retention-message", "--original-transaction-id", chain] + extra)
        }

        let none = try ask([])
        #expect(none.status == 0, "\(none.stderr)")
        #expect(none.stdout == "{}\n", "en-US matches no rule: Apple's default message")
        #expect(
            none.stderr.contains("minted retention request about \(chain) (\(TestkitStore.subscription), en-US"),
            "\(none.stderr)")

        let message = try ask(["--locale", "fr-FR"])
        #expect(
            message.stdout == #"{"message":{"messageIdentifier":"\#(TestkitStore.retentionMessage.uppercased())"}}"#
                + "\n",
            "\(message.stdout) \(message.stderr)")

        let offer = try ask(["--locale", "de-DE"])
        let answer = try JSONValue.parse(Array(offer.stdout.utf8))
        #expect(
            answer["promotionalOffer"]?["messageIdentifier"]?.stringValue == TestkitStore.retentionMessage.uppercased(),
            "\(offer.stdout)")
        let signature = try #require(
            answer["promotionalOffer"]?["promotionalOfferSignatureV2"]?.stringValue, "\(offer.stdout)")
        let claims = try OfferRoutesTests().claims(signature)
        #expect(claims["offerIdentifier"]?.stringValue == TestkitStore.retentionOffer)
        #expect(claims["productId"]?.stringValue == TestkitStore.subscription)
        #expect(claims["transactionId"]?.stringValue == chain)
        #expect(claims["bid"]?.stringValue == TestkitStore.bundleId)

        // --product: the product Apple names; --print: Apple's request, signed, not posted.
        let printed = try ask(["--product", "com.example.game.pro.yearly", "--print"])
        #expect(printed.status == 0, "\(printed.stderr)")
        let request = try #require(
            TestkitAppleTests.payload(printed.stdout.trimmingCharacters(in: .newlines)), "\(printed.stdout)")
        #expect(request["originalTransactionId"]?.stringValue == chain)
        #expect(request["productId"]?.stringValue == "com.example.game.pro.yearly")
        #expect(request["userLocale"]?.stringValue == "en-US")
        #expect(request["environment"]?.stringValue == "LocalTesting")
        #expect(request["requestIdentifier"]?.stringValue.flatMap(UUID.init(uuidString:)) != nil)
        #expect(request["appAppleId"]?.int64Value != nil && request["signedDate"]?.int64Value != nil)

        // Refused before anything is minted: a chain the store never minted, a coin, a bad locale.
        let unknown = try world.testkit(["retention-message", "--original-transaction-id", "2999999999"])
        #expect(unknown.status != 0 && unknown.stderr.contains("2999999999 was minted"), "\(unknown.stderr)")
        #expect(try world.testkit(["purchase", "--user", "u-1", "--product", TestkitStore.coins]).status == 0)
        let coin = try world.testkit(["retention-message", "--original-transaction-id", "2000000002"])
        #expect(coin.status != 0 && coin.stderr.contains("auto-renewable"), "\(coin.stderr)")
        #expect(try ask(["--locale", "en US"]).status == 2)

        // Not signed by a trusted CA: refused, and counted as such.
        let forged = try world.api.post(
            "/v1/apple/retention-message", ["signedPayload": "eyJhbGciOiJFUzI1NiJ9.e30.AAAA"], apiKey: .some(nil))
        #expect(forged.status == 422, "\(forged.text)")

        let metrics = try OpsHTTP.get(port: world.serve.port, "/metrics").body
        for (result, count) in [("none", 1), ("message", 1), ("promotional_offer", 1), ("alternate_product", 0)] {
            let line = #"iap_retention_requests_total{bundle_id="com.example.game",result="\#(result)"} \#(count)"#
            #expect(
                metrics.contains(line) || (count == 0 && !metrics.contains(#"result="\#(result)""#)),
                "\(line): \(metrics)")
        }
        #expect(metrics.contains(#"iap_retention_requests_total{bundle_id="",result="rejected"} 1"#), "\(metrics)")
    }
}
