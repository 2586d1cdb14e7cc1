/// Strict base64 decoding for JWS segments (base64url, unpadded) and x5c entries (standard, padded).
/// Hand-written because Foundation rejects unpadded base64url and this sits on the hot path.
package enum Base64 {
    /// Sextet value of each byte, 0xFF for bytes outside the alphabet (one table per alphabet, so
    /// the inner loop needs no per-character alphabet test).
    private static func table(_ alphabet: String) -> [UInt8] {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.utf8.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }
    private static let standardTable = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    private static let urlTable = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    /// base64url without padding (RFC 7515 §2); `nil` on any other byte.
    package static func decodeURL(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        urlTable.withUnsafeBufferPointer { decode(input, count: input.count, table: $0) }
    }

    /// Standard base64; padding optional; `nil` on any other byte.
    package static func decodeStandard(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var n = input.count
        if n > 0 && input[n - 1] == UInt8(ascii: "=") { n -= 1 }
        if n > 0 && input[n - 1] == UInt8(ascii: "=") { n -= 1 }
        if n != input.count && input.count % 4 != 0 { return nil }
        return standardTable.withUnsafeBufferPointer { decode(input, count: n, table: $0) }
    }

    package static func decodeStandard(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decodeStandard($0) }
    }

    /// Decodes the first `n` bytes of `input`, four characters (three bytes) at a time.
    private static func decode(_ input: UnsafeBufferPointer<UInt8>, count n: Int, table t: UnsafeBufferPointer<UInt8>)
        -> [UInt8]?
    {
        let rest = n % 4
        if rest == 1 { return nil }
        let outCount = n / 4 * 3 + (rest == 0 ? 0 : rest - 1)
        var ok = true
        let out = [UInt8](unsafeUninitializedCapacity: outCount) { out, initialized in
            var i = 0
            var o = 0
            while i + 4 <= n {
                let a = t[Int(input[i])]
                let b = t[Int(input[i + 1])]
                let c = t[Int(input[i + 2])]
                let d = t[Int(input[i + 3])]
                if (a | b | c | d) & 0x80 != 0 {
                    ok = false
                    return
                }
                out[o] = a << 2 | b >> 4
                out[o + 1] = b << 4 | c >> 2
                out[o + 2] = c << 6 | d
                i += 4
                o += 3
            }
            // Reject non-canonical encodings: the leftover bits of the last character must be zero.
            if rest == 2 {
                let a = t[Int(input[i])]
                let b = t[Int(input[i + 1])]
                if (a | b) & 0x80 != 0 || b & 0x0F != 0 {
                    ok = false
                    return
                }
                out[o] = a << 2 | b >> 4
            } else if rest == 3 {
                let a = t[Int(input[i])]
                let b = t[Int(input[i + 1])]
                let c = t[Int(input[i + 2])]
                if (a | b | c) & 0x80 != 0 || c & 0x03 != 0 {
                    ok = false
                    return
                }
                out[o] = a << 2 | b >> 4
                out[o + 1] = b << 4 | c >> 2
            }
            initialized = outCount
        }
        return ok ? out : nil
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode(_ data: some Collection<UInt8>, url: Bool) -> String {
        let bytes = Array(data)
        let full = bytes.count / 3 * 3
        let rest = bytes.count - full
        let count = full / 3 * 4 + (rest == 0 ? 0 : url ? rest + 1 : 4)
        // Written in place: appending a four-element array literal per group allocated it each
        // time (issue 39's profile: 2.6 % of the service's CPU per ingest, sealing the changes).
        return (url ? urlAlphabet : alphabet).withUnsafeBufferPointer { a in
            bytes.withUnsafeBufferPointer { bytes in
                String(unsafeUninitializedCapacity: count) { out in
                    var i = 0
                    var o = 0
                    while i < full {
                        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                        out[o] = a[Int(v >> 18)]
                        out[o + 1] = a[Int(v >> 12 & 63)]
                        out[o + 2] = a[Int(v >> 6 & 63)]
                        out[o + 3] = a[Int(v & 63)]
                        i += 3
                        o += 4
                    }
                    if rest > 0 {
                        let v = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
                        out[o] = a[Int(v >> 18)]
                        out[o + 1] = a[Int(v >> 12 & 63)]
                        o += 2
                        if rest == 2 {
                            out[o] = a[Int(v >> 6 & 63)]
                            o += 1
                        }
                        while !url && o < count {
                            out[o] = UInt8(ascii: "=")
                            o += 1
                        }
                    }
                    return o
                }
            }
        }
    }
}
