/// A single-pass reader for the flat objects events are stored as (string, integer, boolean
/// and null members; any whitespace and key order, as PostgreSQL jsonb gives them back).
/// Returns nil when the text needs the full parser (escapes, nested values, odd numbers), so
/// the fast path never has to be right about the rare cases.
struct FlatObjectReader {
    private let b: UnsafeBufferPointer<UInt8>
    private var i = 0
    /// Fetched once per object, not once per key.
    private let fields = EventField.Lookup.shared

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { b = bytes }

    static func read(_ bytes: UnsafeBufferPointer<UInt8>) -> [EventValue?]? {
        var values = [EventValue?](repeating: nil, count: EventField.count)
        var written: [Int] = []
        var recent: [String?] = []  // one object: nothing to share
        return read(bytes, into: &values, written: &written, recent: &recent) ? values : nil
    }

    /// Reads into `values` (all nil on entry), appending each index it sets to `written` (so a
    /// reused table can be cleared cheaply); false when the full parser is needed. `recent`
    /// (one slot per field, kept by the caller across objects) holds the last string too long to
    /// be stored inline that each field had: an equal one shares its storage instead of
    /// allocating its own (a replay's bundle ids and product types repeat on every fact). Empty:
    /// nothing is shared.
    static func read(
        _ bytes: UnsafeBufferPointer<UInt8>, into values: inout [EventValue?], written: inout [Int],
        recent: inout [String?]
    ) -> Bool {
        var reader = FlatObjectReader(bytes)
        return reader.object(into: &values, written: &written, recent: &recent)
    }

    private mutating func object(
        into values: inout [EventValue?], written: inout [Int], recent: inout [String?]
    ) -> Bool {
        skipSpace()
        guard peek(0x7B) else { return false }
        i += 1
        skipSpace()
        if peek(0x7D) {
            i += 1
            return end()
        }
        while true {
            skipSpace()
            guard peek(0x22), let key = stringRange() else { return false }
            skipSpace()
            guard peek(0x3A) else { return false }
            i += 1
            skipSpace()
            let field = fields.field(UnsafeBufferPointer(rebasing: b[key]))
            guard let value = value(recent: field.map { $0.rawValue }, in: &recent) else { return false }
            if let field {
                values[field.rawValue] = value
                written.append(field.rawValue)
            }
            skipSpace()
            if peek(0x2C) {
                i += 1
                continue
            }
            guard peek(0x7D) else { return false }
            i += 1
            return end()
        }
    }

    private mutating func end() -> Bool {
        skipSpace()
        return i == b.count
    }

    @inline(__always) private func peek(_ byte: UInt8) -> Bool { i < b.count && b[i] == byte }

    @inline(__always) private mutating func skipSpace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
    }

    /// The bytes of a string without escapes, `i` at the opening quote; nil if escaped or unterminated.
    private mutating func stringRange() -> Range<Int>? {
        i += 1
        let start = i
        while i < b.count {
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

    private mutating func value(recent slot: Int?, in recent: inout [String?]) -> EventValue? {
        guard i < b.count else { return nil }
        switch b[i] {
        case 0x22:
            guard let range = stringRange() else { return nil }
            let bytes = UnsafeBufferPointer(rebasing: b[range])
            // Up to 15 UTF-8 bytes a String is stored inline: nothing to share.
            guard bytes.count > 15, let slot, slot < recent.count else {
                return .string(String(decoding: bytes, as: UTF8.self))
            }
            if let last = recent[slot], Self.equal(last, bytes) { return .string(last) }
            let string = String(decoding: bytes, as: UTF8.self)
            recent[slot] = string
            return .string(string)
        case 0x2D, 0x30...0x39:
            let negative = b[i] == 0x2D
            if negative { i += 1 }
            var magnitude: Int64 = 0
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(Int64(b[i] - 0x30))
                if o1 || o2 { return nil }
                magnitude = s
                i += 1
            }
            guard i > start else { return nil }
            if peek(0x2E) || peek(0x65) || peek(0x45) { return nil }
            return .int(negative ? -magnitude : magnitude)
        case 0x74:
            return literal("true", .bool(true))
        case 0x66:
            return literal("false", .bool(false))
        case 0x6E:
            return literal("null", .null)
        default:
            return nil
        }
    }

    private static func equal(_ string: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        string.utf8.withContiguousStorageIfAvailable { $0.count == bytes.count && $0.elementsEqual(bytes) } ?? false
    }

    private mutating func literal(_ text: StaticString, _ value: EventValue) -> EventValue? {
        let count = text.utf8CodeUnitCount
        guard i + count <= b.count else { return nil }
        let p = text.utf8Start
        for k in 0..<count where b[i + k] != p[k] { return nil }
        i += count
        return value
    }
}
