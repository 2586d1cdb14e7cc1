/// Strict base64 decoding for JWS segments (base64url, unpadded) and x5c entries (standard, padded).
/// Hand-written because Foundation rejects unpadded base64url and this sits on the hot path.
enum Base64 {
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            t[Int(c)] = UInt8(i)
        }
        t[Int(UInt8(ascii: "+"))] = 62; t[Int(UInt8(ascii: "/"))] = 63
        t[Int(UInt8(ascii: "-"))] = 64 + 62; t[Int(UInt8(ascii: "_"))] = 64 + 63
        return t
    }()

    /// base64url without padding (RFC 7515 §2); `nil` on any other byte.
    static func decodeURL(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        decode(input, url: true)
    }

    /// Standard base64; padding optional; `nil` on any other byte.
    static func decodeStandard(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        decode(input, url: false)
    }

    static func decodeStandard(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decodeStandard($0) }
    }

    private static func decode(_ input: UnsafeBufferPointer<UInt8>, url: Bool) -> [UInt8]? {
        var n = input.count
        if !url {
            if n > 0 && input[n - 1] == UInt8(ascii: "=") { n -= 1 }
            if n > 0 && input[n - 1] == UInt8(ascii: "=") { n -= 1 }
            if n != input.count && input.count % 4 != 0 { return nil }
        }
        if n % 4 == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(n * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        return table.withUnsafeBufferPointer { t -> [UInt8]? in
            for i in 0..<n {
                var v = t[Int(input[i])]
                if v == 0xFF { return nil }
                if v >= 64 {
                    guard url else { return nil }
                    v -= 64
                } else if url && v >= 62 {
                    return nil
                }
                acc = (acc << 6) | UInt32(v)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                }
            }
            // Reject non-canonical encodings: the leftover bits must be zero.
            if bits > 0 && acc & ((1 << UInt32(bits)) - 1) != 0 { return nil }
            return out
        }
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ data: some Collection<UInt8>, url: Bool) -> String {
        let a = url ? urlAlphabet : alphabet
        let bytes = Array(data)
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [a[Int(v >> 18)], a[Int(v >> 12 & 63)], a[Int(v >> 6 & 63)], a[Int(v & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out += [a[Int(v >> 18)], a[Int(v >> 12 & 63)]]
            if !url { out += [61, 61] }
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [a[Int(v >> 18)], a[Int(v >> 12 & 63)], a[Int(v >> 6 & 63)]]
            if !url { out.append(61) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
