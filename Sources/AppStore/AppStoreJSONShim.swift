// INTERIM: mirrors the JSON target's `JSONValue` API from CONTRACTS.md over Foundation until
// the lead's JSON target lands. Swap = delete this file (every file already `import JSON`).
import Foundation

public enum JSONValue: Sendable, Hashable {
    case null, bool(Bool), number(String), string(String)
    case array([JSONValue]), object([String: JSONValue])

    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONError) -> JSONValue {
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) }
        catch { throw JSONError(offset: 0, message: "\(error)") }
        return convert(object)
    }
    public static func parse(_ text: String) throws(JSONError) -> JSONValue { try parse(Array(text.utf8)) }

    private static func convert(_ any: Any) -> JSONValue {
        switch any {
        case let s as String: return .string(s)
        case let n as NSNumber:
            if String(cString: n.objCType) == "c" { return .bool(n.boolValue) }
            return .number(n.description)
        case let a as [Any]: return .array(a.map(convert))
        case let o as [String: Any]: return .object(o.mapValues(convert))
        default: return .null
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }
    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var int64Value: Int64? {
        guard case .number(let n) = self else { return nil }
        if let v = Int64(n) { return v }
        let intPart = n.split(separator: ".", maxSplits: 1).first.map(String.init) ?? n
        if let v = Int64(intPart) { return v }
        return Double(n).flatMap { $0.isFinite && abs($0) < 9.2e18 ? Int64($0) : nil }
    }
    public var doubleValue: Double? { if case .number(let n) = self { return Double(n) }; return nil }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }
    public var isNull: Bool { if case .null = self { return true }; return false }

    public func serialized(sortedKeys: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        write(into: &out, sorted: sortedKeys)
        return out
    }
    private func write(into out: inout [UInt8], sorted: Bool) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .number(let n): out += Array(n.utf8)
        case .string(let s): JSONValue.writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() { if i > 0 { out.append(UInt8(ascii: ",")) }; v.write(into: &out, sorted: sorted) }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            let keys = sorted ? o.keys.sorted() : Array(o.keys)
            for (i, k) in keys.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(k, into: &out)
                out.append(UInt8(ascii: ":"))
                o[k]!.write(into: &out, sorted: sorted)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
    private static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += [92, 34]
            case UInt8(ascii: "\\"): out += [92, 92]
            case 0x0A: out += [92, UInt8(ascii: "n")]
            case 0x0D: out += [92, UInt8(ascii: "r")]
            case 0x09: out += [92, UInt8(ascii: "t")]
            case 0..<0x20: out += Array(String(format: "\\u%04x", b).utf8)
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

public struct JSONError: Error, CustomStringConvertible {
    public var offset: Int
    public var message: String
    public var description: String { "JSON error at \(offset): \(message)" }
}
