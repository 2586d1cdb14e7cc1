/// RFC 3339 UTC timestamps with milliseconds (`2026-12-29T10:00:00.000Z`), the one time format
/// of the API. Pure arithmetic (civil-from-days), no time zone database and no Foundation.
public enum RFC3339 {
    public static func format(_ millis: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(millis, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the 24 ASCII bytes of `millis` (years 0…9999).
    public static func append(_ millis: Int64, to bytes: inout [UInt8]) {
        let floorSeconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let fraction = Int(millis - floorSeconds * 1000)
        var days = floorSeconds >= 0 ? floorSeconds / 86_400 : (floorSeconds - 86_399) / 86_400
        let secondOfDay = Int(floorSeconds - days * 86_400)
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = max(0, value)
            while divisor > 0 {
                bytes.append(UInt8(rest / divisor % 10) + 0x30)
                rest %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        bytes.append(0x2D)
        digits(month, 2)
        bytes.append(0x2D)
        digits(day, 2)
        bytes.append(0x54)
        digits(secondOfDay / 3600, 2)
        bytes.append(0x3A)
        digits(secondOfDay / 60 % 60, 2)
        bytes.append(0x3A)
        digits(secondOfDay % 60, 2)
        bytes.append(0x2E)
        digits(fraction, 3)
        bytes.append(0x5A)
    }

    /// Parses RFC 3339 (`Z` or `±hh:mm` offsets, optional fraction beyond milliseconds
    /// truncated) into milliseconds since the epoch; nil when it is not RFC 3339.
    public static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard bytes.count >= 20, let year = number(0, 4), bytes[4] == 0x2D, let month = number(5, 2),
            bytes[7] == 0x2D, let day = number(8, 2), bytes[10] == 0x54 || bytes[10] == 0x74,
            let hour = number(11, 2), bytes[13] == 0x3A, let minute = number(14, 2), bytes[16] == 0x3A,
            let second = number(17, 2), (1...12).contains(month), (1...31).contains(day), hour < 24,
            minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis = 0
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            var count = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if count < 3 { millis = millis * 10 + Int(bytes[index] - 0x30) }
                count += 1
                index += 1
            }
            guard count > 0 else { return nil }
            if count < 3 { for _ in count..<3 { millis *= 10 } }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        if bytes[index] == 0x5A || bytes[index] == 0x7A {
            index += 1
        } else if bytes[index] == 0x2B || bytes[index] == 0x2D {
            guard let offsetHours = number(index + 1, 2), bytes.count > index + 3, bytes[index + 3] == 0x3A,
                let offsetMinutes = number(index + 4, 2)
            else { return nil }
            offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (bytes[index] == 0x2D ? -1 : 1)
            index += 6
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        // Days from civil (Howard Hinnant): the inverse of `append`.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offsetSeconds)
        return seconds * 1000 + Int64(millis)
    }
}

extension JSONWriter {
    /// An RFC 3339 string value, written without an intermediate String.
    public mutating func timestamp(_ millis: Int64) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        RFC3339.append(millis, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func timestampOrNull(_ millis: Int64?) {
        if let millis { timestamp(millis) } else { null() }
    }
}
