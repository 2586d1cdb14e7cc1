/// A streaming JSON writer that appends UTF-8 straight into a byte buffer. Commas are placed
/// by the writer, so callers only say what comes next.
public struct JSONWriter: Sendable {
    public var bytes: [UInt8]
    /// One flag per open container: whether the next element needs a comma before it.
    private var needsComma: [Bool] = []
    private var afterKey = false

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        needsComma.reserveCapacity(8)
    }

    mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        if let last = needsComma.last {
            if last { bytes.append(UInt8(ascii: ",")) } else { needsComma[needsComma.count - 1] = true }
        }
    }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    public mutating func endObject() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }

    public mutating func endArray() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func key(_ key: String) {
        separate()
        appendQuoted(key)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
    }

    public mutating func int(_ value: Int64) {
        separate()
        appendDecimal(value)
    }

    public mutating func int(_ value: Int) { int(Int64(value)) }

    public mutating func double(_ value: Double) {
        separate()
        if value.isFinite {
            if abs(value) < 1e15, Double(Int64(value)) == value {
                appendDecimal(Int64(value))
            } else {
                bytes.append(contentsOf: value.description.utf8)
            }
        } else {
            bytes.append(contentsOf: "null".utf8)
        }
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
    }

    public mutating func stringOrNull(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    public mutating func intOrNull(_ value: Int64?) {
        if let value { int(value) } else { null() }
    }

    /// Appends an already-encoded JSON value verbatim (e.g. a stored document).
    public mutating func raw(_ json: some Sequence<UInt8>) {
        separate()
        bytes.append(contentsOf: json)
    }

    public mutating func value(_ value: JSONValue, sortedKeys: Bool = false) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let lexeme):
            separate()
            bytes.append(contentsOf: lexeme.utf8)
        case .string(let s): string(s)
        case .array(let items):
            beginArray()
            for item in items { self.value(item, sortedKeys: sortedKeys) }
            endArray()
        case .object(let members):
            beginObject()
            if sortedKeys {
                for name in members.keys.sorted() {
                    key(name)
                    self.value(members[name]!, sortedKeys: true)
                }
            } else {
                for (name, member) in members {
                    key(name)
                    self.value(member, sortedKeys: false)
                }
            }
            endObject()
        }
    }

    private mutating func appendDecimal(_ value: Int64) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[count] = UInt8(magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            }
            for position in stride(from: count - 1, through: 0, by: -1) {
                bytes.append(buffer[position])
            }
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        // Runs of bytes that need no escape (nearly all of them) are copied whole.
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            var start = 0
            for i in 0..<utf8.count {
                let byte = utf8[i]
                guard byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
                appendEscaped(byte)
                start = i + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        if copied == nil {
            for byte in text.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 {
                    appendEscaped(byte)
                } else {
                    bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""):
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"):
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(UInt8(ascii: "\\"))
        case 0x0A:
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(UInt8(ascii: "n"))
        case 0x0D:
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(UInt8(ascii: "r"))
        case 0x09:
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(UInt8(ascii: "t"))
        default:
            bytes.append(contentsOf: [
                UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30,
                Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)],
            ])
        }
    }
}
