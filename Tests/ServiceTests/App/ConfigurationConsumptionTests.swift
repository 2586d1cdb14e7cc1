import Foundation
import Infrastructure
import Ledger
import Service
import Testing

/// An app's `consumption` block (docs/api.md §5): how CONSUMPTION_REQUESTs are answered,
/// checked at start-up with a line naming the file and the key.
@Suite struct ConfigurationConsumptionTests {
    static func config(_ consumption: String, serverAPI: Bool = true) -> String {
        let key =
            serverAPI
            ? #", "serverAPI": {"issuerId": "i", "keyId": "KEYTEST123", "privateKeyFile": "\#(ConfigurationServerAPITests.testKeyPath)"}"#
            : ""
        return
            #"{"apps": [{"bundleId": "com.example", "environments": ["Sandbox"]\#(key), "consumption": \#(consumption)}]}"#
    }

    static func parse(_ text: String) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(Array(text.utf8), file: "/etc/iap/config.json", baseDirectory: "/")
    }

    @Test func theSettingsAreReadWithApplesWordsAndDefaults() throws {
        let full = try Self.parse(
            Self.config(
                #"{"customerConsented": true, "sampleContentProvided": true, "refundPreference": "GRANT_PRORATED"}"#))
        #expect(
            full.apps[0].consumption
                == ConsumptionInfo.Settings(
                    customerConsented: true, sampleContentProvided: true, refundPreference: .grantProrated))
        let least = try Self.parse(Self.config(#"{"customerConsented": false}"#))
        #expect(
            least.apps[0].consumption
                == ConsumptionInfo.Settings(customerConsented: false, sampleContentProvided: false))
        #expect(try Self.parse(Self.config("null")).apps[0].consumption == nil)
    }

    @Test func mistakesNameTheKey() {
        let cases: [(String, Bool, String, String)] = [
            (#"{"customerConsented": true}"#, false, "apps[0].consumption", "serverAPI"),
            (#"{}"#, true, "apps[0].consumption.customerConsented", "is required"),
            (#"{"customerConsented": "yes"}"#, true, "apps[0].consumption.customerConsented", "true or false"),
            (
                #"{"customerConsented": true, "refundPreference": "REFUND"}"#, true,
                "apps[0].consumption.refundPreference", "GRANT_FULL"
            ),
            (#"{"customerConsented": true, "consented": true}"#, true, "apps[0].consumption.consented", "unknown key"),
            (#"true"#, true, "apps[0].consumption", "expected an object"),
        ]
        for (block, withKey, key, words) in cases {
            do {
                _ = try Self.parse(Self.config(block, serverAPI: withKey))
                Issue.record("accepted \(block)")
            } catch {
                #expect(error.key == key, "\(block): \(error)")
                #expect("\(error)".contains(words), "\(block): \(error)")
                #expect("\(error)".contains("/etc/iap/config.json"))
            }
        }
    }
}
