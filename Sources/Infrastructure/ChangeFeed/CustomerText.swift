import JSON

/// The one place a rendered Customer document (api.md §2) names other users: its top-level
/// `sameAppleAccountAs` array. The feed stores the document with subjects there (ChangeSealing)
/// and serves it with ids again; only that array's bytes change, so every other byte of the
/// document is served exactly as rendered (a parse and re-render would not keep its key order).
package enum CustomerText {
    /// Customer.write puts the key after `balances`, at the top level; inside a JSON string a
    /// quote is always escaped, so these bytes cannot occur in any value.
    private static let key = Array(",\"sameAppleAccountAs\":[".utf8)

    /// The ids in the document's `sameAppleAccountAs`; nil when it has none (or is no document).
    package static func sameAppleAccountAs(in document: String) -> [String]? {
        guard let range = arrayRange(Array(document.utf8)) else { return nil }
        guard case .array(let items)? = try? JSONValue.parse(Array(document.utf8)[range]) else { return nil }
        return items.compactMap(\.stringValue)
    }

    /// The document with each element of `sameAppleAccountAs` mapped by `rename`.
    package static func mappingSameAppleAccountAs(_ document: String, _ rename: (String) -> String) -> String {
        let bytes = Array(document.utf8)
        guard let range = arrayRange(bytes), case .array(let items)? = try? JSONValue.parse(bytes[range]) else {
            return document
        }
        var w = JSONWriter(capacity: range.count + 16)
        w.beginArray()
        for item in items { w.string(item.stringValue.map(rename) ?? "") }
        w.endArray()
        return String(decoding: bytes[..<range.lowerBound] + w.bytes + bytes[range.upperBound...], as: UTF8.self)
    }

    /// The bytes of the array, `[` to `]` inclusive.
    private static func arrayRange(_ bytes: [UInt8]) -> Range<Int>? {
        guard bytes.count > key.count, let start = firstIndex(of: key, in: bytes) else { return nil }
        let open = start + key.count - 1
        var inString = false
        var escaped = false
        var index = open + 1
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "]") {
                return open..<(index + 1)
            }
            index += 1
        }
        return nil
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}
