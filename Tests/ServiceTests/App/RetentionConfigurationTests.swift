import Ledger
import Testing

@testable import Infrastructure
@testable import Service

/// Per app, `"retention": {"rules": [...]}` (api.md §8, docs/config.md): read whole at start-up;
/// a bad rule stops it with one line naming the file and the key.
@Suite struct RetentionConfigurationTests {
    static func parse(_ retention: String) throws(ConfigurationError) -> Configuration {
        let text = #"{"apps": [{"bundleId": "b", "environments": ["Sandbox"], "retention": \#(retention)}]}"#
        return try Configuration.parse(Array(text.utf8), file: "c.json", baseDirectory: ".")
    }

    @Test func rulesLoadInOrderWithMessageIdsAsUUIDs() throws {
        let configuration = try Self.parse(
            """
            {"rules": [
              {"productId": "monthly", "locale": "de", "alternateProduct": {"productId": "yearly"}},
              {"minTenureMonths": 6, "message": "A1B2C3D4-E5F6-4890-A1B2-C3D4E5F67890"},
              {"alternateProduct": {"productId": "yearly", "messageId": "b2c3d4e5-f6a7-4901-b2c3-d4e5f6a78901"}}
            ]}
            """)
        #expect(
            configuration.apps[0].retention
                == RetentionRules(rules: [
                    .init(
                        productId: "monthly", locale: "de", minTenureMonths: nil,
                        action: .alternateProduct(productId: "yearly", messageId: nil)),
                    .init(
                        productId: nil, locale: nil, minTenureMonths: 6,
                        action: .message(messageId: "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890")),
                    .init(
                        productId: nil, locale: nil, minTenureMonths: nil,
                        action: .alternateProduct(
                            productId: "yearly", messageId: "b2c3d4e5-f6a7-4901-b2c3-d4e5f6a78901")),
                ]))
        let none = try Configuration.parse(
            Array(#"{"apps": [{"bundleId": "b", "environments": ["Sandbox"]}]}"#.utf8), file: "c.json",
            baseDirectory: ".")
        #expect(none.apps[0].retention == nil)
    }

    @Test(arguments: [
        (#"{}"#, "apps[0].retention.rules: is required"),
        (#"{"rules": [], "default": 1}"#, "apps[0].retention.default: unknown key"),
        (
            #"{"rules": [{"productId": "p"}]}"#,
            "apps[0].retention.rules[0]: needs exactly one of message, alternateProduct, promotionalOffer (found 0)"
        ),
        (
            #"{"rules": [{"message": "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890", "alternateProduct": {"productId": "y"}}]}"#,
            "apps[0].retention.rules[0]: needs exactly one of message, alternateProduct, promotionalOffer (found 2)"
        ),
        (#"{"rules": [{"message": "thanks"}]}"#, #"apps[0].retention.rules[0].message: must be a UUID"#),
        (
            #"{"rules": [{"message": "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890"}, {"minTenureMonths": -1, "message": "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890"}]}"#,
            "apps[0].retention.rules[1].minTenureMonths: expected a whole number of months"
        ),
        (
            #"{"rules": [{"alternateProduct": {"messageId": "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890"}}]}"#,
            "apps[0].retention.rules[0].alternateProduct.productId: is required"
        ),
        (
            #"{"rules": [{"promotionalOffer": {"offerId": "stay50"}}]}"#,
            "apps[0].retention.rules[0].promotionalOffer: needs the app's serverAPI key"
        ),
        (
            #"{"rules": [{"local": "de", "message": "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890"}]}"#,
            "apps[0].retention.rules[0].local: unknown key"
        ),
    ])
    func aBadRuleStopsStartUpNamingItsKey(retention: String, message: String) {
        #expect {
            _ = try Self.parse(retention)
        } throws: { error in
            "\(error)".hasPrefix("c.json: " + message) && !"\(error)".contains("\n")
        }
    }
}
