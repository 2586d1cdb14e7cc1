import JSON

/// RFC 3339 UTC timestamps with milliseconds ("2026-12-29T10:00:00.000Z"), without Foundation.
public enum RFC3339 {
    /// The 24 characters of `ms` (since the Unix epoch), proleptic Gregorian, years 0000–9999.
    public static func string(fromMilliseconds ms: Int64) -> String {
        withDigits(ms) { String(decoding: $0, as: UTF8.self) }
    }

    /// Parses "YYYY-MM-DDTHH:MM:SS[.fff]Z" or with a "+HH:MM"/"-HH:MM" offset; nil if malformed.
    public static func milliseconds(from text: String) -> Int64? {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + count) {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                v = v * 10 + Int64(b[i] - 0x30)
            }
            return v
        }
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == UInt8(ascii: " "),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let year = num(0, 4), let month = num(5, 2), let day = num(8, 2),
            let hour = num(11, 2), let minute = num(14, 2), let second = num(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var millis: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var scale: Int64 = 100
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                millis += Int64(b[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offset: Int64 = 0
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            guard let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == UInt8(ascii: ":"), let om = num(i + 4, 2)
            else { return nil }
            offset = (oh * 60 + om) * 60_000 * (b[i] == UInt8(ascii: "+") ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis - offset
    }

    /// Writes the quoted timestamp, or `null`, without building a String.
    static func write(_ ms: Int64?, to writer: inout JSONWriter) {
        guard let ms else { return writer.null() }
        withDigits(ms, quoted: true) { writer.raw($0) }
    }

    private static func withDigits<R>(
        _ ms: Int64, quoted: Bool = false, _ body: (UnsafeBufferPointer<UInt8>) -> R
    ) -> R {
        let (days, msOfDay) = floorDivide(ms, 86_400_000)
        let (year, month, day) = civilFromDays(days)
        let hour = msOfDay / 3_600_000
        let minute = msOfDay / 60_000 % 60
        let second = msOfDay / 1000 % 60
        let milli = msOfDay % 1000
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 26) { buffer in
            var i = 0
            func put(_ byte: UInt8) { buffer[i] = byte; i += 1 }
            func digits(_ value: Int64, _ count: Int) {
                var divisor: Int64 = 1
                for _ in 1..<count { divisor *= 10 }
                var v = value
                for _ in 0..<count {
                    put(UInt8(truncatingIfNeeded: v / divisor % 10) + 0x30)
                    v %= divisor
                    divisor /= 10
                    if divisor == 0 { divisor = 1 }
                }
            }
            if quoted { put(UInt8(ascii: "\"")) }
            digits(year, 4); put(UInt8(ascii: "-")); digits(month, 2); put(UInt8(ascii: "-")); digits(day, 2)
            put(UInt8(ascii: "T")); digits(hour, 2); put(UInt8(ascii: ":")); digits(minute, 2)
            put(UInt8(ascii: ":")); digits(second, 2); put(UInt8(ascii: ".")); digits(milli, 3)
            put(UInt8(ascii: "Z"))
            if quoted { put(UInt8(ascii: "\"")) }
            return body(UnsafeBufferPointer(start: buffer.baseAddress, count: i))
        }
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        var q = a / b
        var r = a % b
        if r < 0 { q -= 1; r += b }
        return (q, r)
    }

    /// Howard Hinnant's civil_from_days.
    static func civilFromDays(_ days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// Howard Hinnant's days_from_civil.
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
