/// A single-pass reader for the flat objects events are stored as (string, integer, boolean
/// and null members; any whitespace and key order, as PostgreSQL jsonb gives them back).
/// Returns nil when the text needs the full parser (escapes, nested values, odd numbers), so
/// the fast path never has to be right about the rare cases.
enum FlatObjectReader {
    static func read(_ b: UnsafeBufferPointer<UInt8>) -> [EventValue?]? {
        var values = [EventValue?](repeating: nil, count: EventField.allCases.count)
        var i = 0
        let n = b.count
        @inline(__always) func skipSpace() {
            while i < n, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        }
        /// The bytes of a string without escapes, i at the opening quote; nil if escaped/unterminated.
        func stringRange() -> Range<Int>? {
            i += 1
            let start = i
            while i < n {
                let c = b[i]
                if c == 0x22 {
                    i += 1
                    return start..<(i - 1)
                }
                if c == 0x5C || c < 0x20 { return nil }
                i += 1
            }
            return nil
        }
        skipSpace()
        guard i < n, b[i] == 0x7B else { return nil }
        i += 1
        skipSpace()
        if i < n, b[i] == 0x7D { return values }
        while true {
            skipSpace()
            guard i < n, b[i] == 0x22, let key = stringRange() else { return nil }
            skipSpace()
            guard i < n, b[i] == 0x3A else { return nil }
            i += 1
            skipSpace()
            guard i < n else { return nil }
            let value: EventValue
            switch b[i] {
            case 0x22:
                guard let range = stringRange() else { return nil }
                value = .string(String(decoding: UnsafeBufferPointer(rebasing: b[range]), as: UTF8.self))
            case 0x2D, 0x30...0x39:
                let negative = b[i] == 0x2D
                if negative { i += 1 }
                var magnitude: Int64 = 0
                let start = i
                while i < n, b[i] >= 0x30, b[i] <= 0x39 {
                    let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.addingReportingOverflow(Int64(b[i] - 0x30))
                    if o1 || o2 { return nil }
                    magnitude = s
                    i += 1
                }
                guard i > start else { return nil }
                if i < n, b[i] == 0x2E || b[i] == 0x65 || b[i] == 0x45 { return nil }
                value = .int(negative ? -magnitude : magnitude)
            case 0x74:
                guard i + 4 <= n, b[i + 1] == 0x72, b[i + 2] == 0x75, b[i + 3] == 0x65 else { return nil }
                i += 4
                value = .bool(true)
            case 0x66:
                guard i + 5 <= n, b[i + 1] == 0x61, b[i + 2] == 0x6C, b[i + 3] == 0x73, b[i + 4] == 0x65 else {
                    return nil
                }
                i += 5
                value = .bool(false)
            case 0x6E:
                guard i + 4 <= n, b[i + 1] == 0x75, b[i + 2] == 0x6C, b[i + 3] == 0x6C else { return nil }
                i += 4
                value = .null
            default:
                return nil
            }
            if let field = EventField.lookup(UnsafeBufferPointer(rebasing: b[key])) { values[field.rawValue] = value }
            skipSpace()
            guard i < n else { return nil }
            if b[i] == 0x2C {
                i += 1
                continue
            }
            if b[i] == 0x7D {
                i += 1
                break
            }
            return nil
        }
        skipSpace()
        return i == n ? values : nil
    }
}
