import JSON
import TestSupport
import Testing

/// The validator the OpenAPI answer tests rely on: each keyword it knows refuses what it should,
/// so a document that says less than the service answers cannot pass by the validator's leniency.
@Suite struct JSONSchemaValidatorTests {
    static let root = try! JSONValue.parse(
        #"""
        {"components": {"schemas": {
          "Entitlement": {"type": "object", "required": ["productId", "source"], "properties": {
            "productId": {"type": "string"}, "expiresAt": {"type": ["string", "null"], "format": "date-time"},
            "source": {"type": "string", "enum": ["subscription", "promotional"]},
            "grantId": {"type": "string", "pattern": "^grt_[0-9a-f]{4}$"}}},
          "Customer": {"type": "object", "required": ["entitlements", "version"], "properties": {
            "entitlements": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Entitlement"}},
            "version": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 2}}}},
          "Closed": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "boolean"}}},
          "MaybeCustomer": {"oneOf": [{"$ref": "#/components/schemas/Customer"}, {"type": "null"}]},
          "Either": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]}
        }}}
        """#)

    func errors(_ json: String, _ schema: String) throws -> [String] {
        JSONSchemaValidator(root: Self.root).errors(
            try JSONValue.parse(json), .object(["$ref": .string("#/components/schemas/\(schema)")]))
    }

    @Test func aConformingValuePasses() throws {
        let customer =
            #"{"entitlements": {"pro": {"productId": "p", "source": "promotional", "expiresAt": null, "grantId": "grt_00af"}}, "version": 3, "tags": ["ab"]}"#
        #expect(try errors(customer, "Customer") == [])
        #expect(try errors("null", "MaybeCustomer") == [])
        #expect(try errors(customer, "MaybeCustomer") == [])
        #expect(try errors("7", "Either") == [] && errors(#""x""#, "Either") == [])
    }

    @Test func eachKeywordRefusesWhatItShould() throws {
        let cases: [(String, String, String)] = [
            (
                #"{"entitlements": {"pro": {"productId": null, "source": "promotional"}}, "version": 1}"#, "Customer",
                "$.entitlements.pro.productId: null is not of type string"
            ),
            (
                #"{"entitlements": {"pro": {"source": "promotional"}}, "version": 1}"#, "Customer",
                "$.entitlements.pro: required member \"productId\" is missing"
            ),
            (
                #"{"entitlements": {"pro": {"productId": "p", "source": "gift"}}, "version": 1}"#, "Customer",
                "is not one of"
            ),
            (
                #"{"entitlements": {"pro": {"productId": "p", "source": "promotional", "grantId": "grt_XYZ0"}}, "version": 1}"#,
                "Customer", "does not match"
            ),
            (
                #"{"entitlements": {"pro": {"productId": "p", "source": "promotional", "expiresAt": "2026-13-01T00:00:00Z"}}, "version": 1}"#,
                "Customer", "is not an RFC 3339 date-time"
            ),
            (#"{"entitlements": {}, "version": 1.5}"#, "Customer", "is not of type integer"),
            (#"{"entitlements": {}, "version": -1}"#, "Customer", "< 0"),
            (#"{"entitlements": {}, "version": 1, "tags": []}"#, "Customer", "fewer than 1"),
            (#"{"entitlements": {}, "version": 1, "tags": ["a"]}"#, "Customer", "shorter than 2"),
            (#"{"a": true, "b": 1}"#, "Closed", "member \"b\" is not in the schema"),
            (#"{"entitlements": {}}"#, "MaybeCustomer", "matches 0 of the oneOf choices"),
            (#""xy""#, "Either", "matches none of the anyOf choices"),
        ]
        for (json, schema, expected) in cases {
            let found = try errors(json, schema)
            #expect(found.contains { $0.contains(expected) }, "\(json) against \(schema): \(found)")
        }
    }

    @Test func anUnknownKeywordOrReferenceIsAnErrorNotAPass() {
        let validator = JSONSchemaValidator(root: Self.root)
        #expect(
            validator.errors(.string("x"), .object(["type": "string", "multipleOf": .int(2)])).contains {
                $0.contains("does not know the keyword \"multipleOf\"")
            })
        #expect(
            validator.errors(.string("x"), .object(["$ref": "#/components/schemas/Nowhere"])).contains {
                $0.contains("resolves to nothing")
            })
    }
}
