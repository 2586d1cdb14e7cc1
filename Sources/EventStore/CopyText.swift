import Glibc

/// PostgreSQL's COPY text format (`COPY … TO STDOUT` / `FROM STDIN`): rows end in a newline,
/// fields are separated by tabs, `\N` is NULL, and backslash escapes any tab, newline or
/// backslash inside a field. Decoding works on slices of the received buffer (no String per
/// field) because the replay reads hundreds of megabytes this way; the functions are inlinable
/// so that callers in other modules pay no call per byte or field.
public enum CopyText {
    /// The index of the first `byte` in `buffer[from..<to]` (libc's vectorised `memchr`: the
    /// replay scans hundreds of megabytes for row ends and escapes).
    @inlinable @inline(__always)
    public static func find(_ byte: UInt8, in buffer: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Int? {
        guard from < to, let base = buffer.baseAddress,
            let found = memchr(base + from, Int32(byte), to - from)
        else { return nil }
        return UnsafeRawPointer(found) - UnsafeRawPointer(base)
    }

    /// Calls `row` with the fields of each row of COPY text output, as slices of `bytes` still
    /// escaped (see `field`): no allocation per field.
    @inlinable
    public static func forEachRow(_ bytes: [UInt8], _ row: (UnsafeBufferPointer<UInt8>, [Range<Int>]) -> Void) {
        bytes.withUnsafeBufferPointer { buffer in
            var fields: [Range<Int>] = []
            var start = 0
            let n = buffer.count
            while start < n {
                // Fields are short but for the last (a document): find the row's end first.
                let end = find(0x0A, in: buffer, from: start, to: n) ?? n
                var field = start
                while let tab = find(0x09, in: buffer, from: field, to: end) {
                    fields.append(field..<tab)
                    field = tab + 1
                }
                fields.append(field..<end)
                row(buffer, fields)
                fields.removeAll(keepingCapacity: true)
                start = end + 1
            }
        }
    }

    /// One field of `forEachRow`, unescaped.
    @inlinable
    public static func field(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> [UInt8] {
        let bytes = UnsafeBufferPointer(rebasing: buffer[range])
        return find(0x5C, in: buffer, from: range.lowerBound, to: range.upperBound) != nil
            ? unescape(bytes) : Array(bytes)
    }

    /// One field of `forEachRow` as text, unescaped.
    @inlinable
    public static func string(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        let bytes = UnsafeBufferPointer(rebasing: buffer[range])
        return bytes.contains(0x5C)
            ? String(decoding: unescape(bytes), as: UTF8.self) : String(decoding: bytes, as: UTF8.self)
    }

    /// One field of `forEachRow` holding a (possibly negative) decimal integer.
    @inlinable
    public static func integer(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int64 {
        var value: Int64 = 0
        var negative = false
        for index in range {
            if buffer[index] == 0x2D { negative = true } else { value = value &* 10 &+ Int64(buffer[index] &- 0x30) }
        }
        return negative ? -value : value
    }

    /// Undoes COPY text escaping (`\\`, `\t`, `\n`, `\r`, `\b`, `\f`, `\v`, octal).
    @inlinable
    public static func unescape(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            guard byte == 0x5C, i < bytes.count else {
                out.append(byte)
                continue
            }
            let next = bytes[i]
            i += 1
            switch next {
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "v"): out.append(0x0B)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var value = next - 0x30
                var digits = 1
                while digits < 3, i < bytes.count, (0x30...0x37).contains(bytes[i]) {
                    value = value &* 8 &+ (bytes[i] - 0x30)
                    i += 1
                    digits += 1
                }
                out.append(value)
            default: out.append(next)
            }
        }
        return out
    }

    /// Escapes one value for COPY text input.
    @inlinable
    public static func escape(_ text: String, into out: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case 0x5C:
                out.append(0x5C)
                out.append(0x5C)
            case 0x09:
                out.append(0x5C)
                out.append(UInt8(ascii: "t"))
            case 0x0A:
                out.append(0x5C)
                out.append(UInt8(ascii: "n"))
            case 0x0D:
                out.append(0x5C)
                out.append(UInt8(ascii: "r"))
            default: out.append(byte)
            }
        }
    }

    /// Escapes raw bytes (a rendered document) for COPY text input.
    @inlinable
    public static func escape(bytes: [UInt8], into out: inout [UInt8]) {
        if !bytes.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            out.append(contentsOf: bytes)
            return
        }
        escape(String(decoding: bytes, as: UTF8.self), into: &out)
    }
}
