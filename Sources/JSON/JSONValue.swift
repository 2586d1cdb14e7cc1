/// A parsed JSON document. Numbers keep their raw lexeme so 64-bit ids and Xcode's
/// fractional millisecond dates survive without a trip through `Double`.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONError) -> JSONValue {
        let result: Result<JSONValue, JSONError>? = bytes.withContiguousStorageIfAvailable { buffer in
            var parser = JSONParser(buffer)
            do throws(JSONError) { return .success(try parser.parseDocument()) } catch { return .failure(error) }
        }
        if let result { return try result.get() }
        return try parse(Array(bytes))
    }

    public static func parse(_ text: String) throws(JSONError) -> JSONValue {
        var text = text
        let result: Result<JSONValue, JSONError> = text.withUTF8 { buffer in
            var parser = JSONParser(buffer)
            do throws(JSONError) { return .success(try parser.parseDocument()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// Integral value of a number; a fractional lexeme ("1697679936049.7297") is truncated
    /// toward zero, as Apple's libraries do with Xcode-signed dates.
    public var int64Value: Int64? {
        guard case .number(let lexeme) = self else { return nil }
        if let exact = Int64(lexeme) { return exact }
        guard let double = Double(lexeme), double.isFinite,
            double >= -9.2e18, double <= 9.2e18
        else { return nil }
        return Int64(double)  // Int64(_:) truncates toward zero
    }

    public var doubleValue: Double? {
        if case .number(let lexeme) = self { return Double(lexeme) }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    public func serialized(sortedKeys: Bool = false) -> [UInt8] {
        var writer = JSONWriter()
        writer.value(self, sortedKeys: sortedKeys)
        return writer.bytes
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .number(String(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }

    public static func int(_ value: Int64) -> JSONValue { .number(String(value)) }
}

/// Where and why a document failed to parse.
public struct JSONError: Error, CustomStringConvertible, Sendable, Equatable {
    public var offset: Int
    public var message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}
