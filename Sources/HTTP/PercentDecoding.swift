/// Percent-decoding of path segments and query components (RFC 3986, plus `+` as space in queries).
enum PercentDecoding {
    /// Decodes `%XX` (and `+` when `plusIsSpace`). Malformed escapes are kept literally;
    /// invalid UTF-8 becomes U+FFFD rather than an error, since these are only lookup keys.
    static func decode(_ text: Substring, plusIsSpace: Bool) -> String {
        let utf8 = text.utf8
        guard utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        var i = utf8.startIndex
        while i != utf8.endIndex {
            let byte = utf8[i]
            if byte == UInt8(ascii: "%"),
                let h = utf8.index(i, offsetBy: 1, limitedBy: utf8.endIndex), h != utf8.endIndex,
                let l = utf8.index(h, offsetBy: 1, limitedBy: utf8.endIndex), l != utf8.endIndex,
                let hi = hexValue(utf8[h]), let lo = hexValue(utf8[l])
            {
                out.append(hi << 4 | lo)
                i = utf8.index(after: l)
                continue
            }
            out.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            i = utf8.index(after: i)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses `a=1&b=x%20y`; the first occurrence of a name wins, a name without `=` maps to "".
    static func parseQuery(_ query: Substring) -> [String: String] {
        var result: [String: String] = [:]
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let name: Substring
            let value: Substring
            if let eq = pair.firstIndex(of: "=") {
                name = pair[..<eq]
                value = pair[pair.index(after: eq)...]
            } else {
                name = pair
                value = ""
            }
            let key = decode(name, plusIsSpace: true)
            if result[key] == nil { result[key] = decode(value, plusIsSpace: true) }
        }
        return result
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
