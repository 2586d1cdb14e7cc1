import Foundation
import JSON

/// Checks a JSON value against a schema of the service's OpenAPI 3.1 document (JSON Schema
/// 2020-12), for the tests that hold the document to what the service really answers. It knows
/// the subset the document uses — `$ref` (local), `type` (one or a list, `null` included;
/// `integer` is a number without fraction or exponent), `enum`, `const`, `required`,
/// `properties`, `additionalProperties` (false or a schema), `items`, `minItems`/`maxItems`,
/// `oneOf`, `anyOf`, `allOf`, `minLength`/`maxLength`, `pattern`, `format: date-time`,
/// `minimum`/`maximum` — and refuses any other assertion keyword, so a schema that grows one
/// it does not know fails the test instead of passing unchecked.
public struct JSONSchemaValidator {
    /// The whole document, for `$ref`.
    public let root: JSONValue

    public init(root: JSONValue) {
        self.root = root
    }

    /// Keywords that assert nothing about an answer (annotations, and request-side extensions
    /// such as `x-maxBytes`, which the boundary tests check on requests).
    static let annotations: Set<String> = [
        "description", "title", "default", "deprecated", "examples", "example", "format", "contentEncoding",
        "contentMediaType", "readOnly", "writeOnly", "x-maxBytes", "x-futureInstant",
    ]
    static let assertions: Set<String> = [
        "$ref", "type", "enum", "const", "required", "properties", "additionalProperties", "items", "minItems",
        "maxItems", "oneOf", "anyOf", "allOf", "minLength", "maxLength", "pattern", "minimum", "maximum",
    ]

    /// Every way `value` breaks `schema`, each as "<JSON path>: <what>"; empty when it conforms.
    public func errors(_ value: JSONValue, _ schema: JSONValue, at path: String = "$") -> [String] {
        guard let keywords = schema.objectValue else {
            if schema.boolValue == false { return ["\(path): no value is allowed here"] }
            return []
        }
        var out: [String] = []
        for keyword in keywords.keys.sorted()
        where !Self.annotations.contains(keyword) && !Self.assertions.contains(keyword) {
            out.append("\(path): the validator does not know the keyword \"\(keyword)\"; teach it")
        }
        if let reference = keywords["$ref"]?.stringValue {
            guard let target = resolve(reference) else {
                return out + ["\(path): $ref \(reference) resolves to nothing"]
            }
            out += errors(value, target, at: path)
        }
        if let types = Self.types(schema), !types.contains(where: { Self.matches(value, $0) }) {
            // The rest would only repeat the mismatch.
            return out + ["\(path): \(Self.show(value)) is not of type \(types.joined(separator: " or "))"]
        }
        if let allowed = keywords["enum"]?.arrayValue, !allowed.contains(where: { Self.same($0, value) }) {
            out.append("\(path): \(Self.show(value)) is not one of \(allowed.map(Self.show).joined(separator: ", "))")
        }
        if let constant = keywords["const"], !Self.same(constant, value) {
            out.append("\(path): \(Self.show(value)) is not \(Self.show(constant))")
        }
        switch value {
        case .string(let text):
            let characters = Int64(text.unicodeScalars.count)
            if let min = keywords["minLength"]?.int64Value, characters < min {
                out.append("\(path): \(Self.show(value)) is shorter than \(min)")
            }
            if let max = keywords["maxLength"]?.int64Value, characters > max {
                out.append("\(path): \(Self.show(value)) is longer than \(max)")
            }
            if let pattern = keywords["pattern"]?.stringValue {
                if let regex = try? NSRegularExpression(pattern: pattern) {
                    if regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil {
                        out.append("\(path): \(Self.show(value)) does not match \(pattern)")
                    }
                } else {
                    out.append("\(path): the pattern \(pattern) does not compile")
                }
            }
            if keywords["format"]?.stringValue == "date-time", !Self.isDateTime(text) {
                out.append("\(path): \(Self.show(value)) is not an RFC 3339 date-time")
            }
        case .number(let lexeme):
            if let number = Double(lexeme) {
                if let min = keywords["minimum"]?.doubleValue, number < min {
                    out.append("\(path): \(lexeme) < \(min)")
                }
                if let max = keywords["maximum"]?.doubleValue, number > max {
                    out.append("\(path): \(lexeme) > \(max)")
                }
            }
        case .array(let items):
            if let min = keywords["minItems"]?.int64Value, Int64(items.count) < min {
                out.append("\(path): \(items.count) items, fewer than \(min)")
            }
            if let max = keywords["maxItems"]?.int64Value, Int64(items.count) > max {
                out.append("\(path): \(items.count) items, more than \(max)")
            }
            if let itemSchema = keywords["items"] {
                for (index, item) in items.enumerated() { out += errors(item, itemSchema, at: "\(path)[\(index)]") }
            }
        case .object(let members):
            for name in keywords["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where members[name] == nil {
                out.append("\(path): required member \"\(name)\" is missing")
            }
            let properties = keywords["properties"]?.objectValue ?? [:]
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                if let propertySchema = properties[name] {
                    out += errors(member, propertySchema, at: "\(path).\(name)")
                } else if let additional = keywords["additionalProperties"] {
                    if additional.boolValue == false {
                        out.append("\(path): member \"\(name)\" is not in the schema (additionalProperties: false)")
                    } else {
                        out += errors(member, additional, at: "\(path).\(name)")
                    }
                }
            }
        default:
            break
        }
        if let choices = keywords["oneOf"]?.arrayValue {
            let passing = choices.filter { errors(value, $0, at: path).isEmpty }.count
            if passing != 1 {
                out.append("\(path): \(Self.show(value)) matches \(passing) of the oneOf choices, not exactly one")
                if passing == 0 {
                    for (index, choice) in choices.enumerated() {
                        out += errors(value, choice, at: path).map { "  oneOf[\(index)] " + $0 }
                    }
                }
            }
        }
        if let choices = keywords["anyOf"]?.arrayValue,
            !choices.contains(where: { errors(value, $0, at: path).isEmpty })
        {
            out.append("\(path): \(Self.show(value)) matches none of the anyOf choices")
        }
        for part in keywords["allOf"]?.arrayValue ?? [] { out += errors(value, part, at: path) }
        return out
    }

    /// The node a local reference (`#/components/schemas/Customer`) names.
    public func resolve(_ reference: String) -> JSONValue? {
        guard reference.hasPrefix("#/") else { return nil }
        var node = root
        for part in reference.dropFirst(2).split(separator: "/") {
            let name = part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard let next = node[name] else { return nil }
            node = next
        }
        return node
    }

    static func types(_ schema: JSONValue) -> [String]? {
        if let one = schema["type"]?.stringValue { return [one] }
        return schema["type"]?.arrayValue?.compactMap(\.stringValue)
    }

    static func matches(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("string", .string), ("boolean", .bool), ("array", .array), ("object", .object), ("null", .null),
            ("number", .number):
            true
        case ("integer", .number(let lexeme)): !lexeme.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
        default: false
        }
    }

    static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        a.serialized() == b.serialized()
    }

    static func show(_ value: JSONValue) -> String {
        let text = String(decoding: value.serialized(), as: UTF8.self)
        return text.count > 60 ? "\(text.prefix(40))…(\(text.count) chars)" : text
    }

    /// RFC 3339 date-time (section 5.6), with field ranges.
    static func isDateTime(_ text: String) -> Bool {
        text.range(
            of:
                #"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"#,
            options: .regularExpression) != nil
    }
}
