/// An ISO 8601 duration (`P7D`, `P1M`, `P1Y2M`, `PT12H`, `P2W`), as the config gives a
/// non-renewing product's access time. Months and years are calendar steps in UTC (31 Jan +
/// P1M is 28/29 Feb, as Apple's billing calendar does), so the length is not a fixed count of
/// milliseconds and is applied with `adding(to:)`.
public struct ISODuration: Sendable, Hashable, CustomStringConvertible {
    public var months: Int64
    public var days: Int64
    public var seconds: Int64
    /// The text it was read from, for messages and the catalog's canonical form.
    public let description: String

    /// nil unless `text` is `P[nY][nM][nW][nD][T[nH][nM][nS]]` with whole numbers and at least
    /// one non-zero part.
    public init?(_ text: String) {
        var months: Int64 = 0
        var days: Int64 = 0
        var seconds: Int64 = 0
        var bytes = Array(text.utf8)[...]
        guard bytes.popFirst() == UInt8(ascii: "P"), !bytes.isEmpty else { return nil }
        var inTime = false
        var sawPart = false
        var sawTimePart = false
        var number: Int64?
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let (times, overflow1) = (number ?? 0).multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                guard !overflow1, !overflow2, sum <= 1_000_000 else { return nil }
                number = sum
            case UInt8(ascii: "T"):
                guard !inTime, number == nil else { return nil }
                inTime = true
            default:
                guard let value = number else { return nil }
                number = nil
                sawPart = true
                sawTimePart = sawTimePart || inTime
                switch (inTime, byte) {
                case (false, UInt8(ascii: "Y")): months += 12 * value
                case (false, UInt8(ascii: "M")): months += value
                case (false, UInt8(ascii: "W")): days += 7 * value
                case (false, UInt8(ascii: "D")): days += value
                case (true, UInt8(ascii: "H")): seconds += 3600 * value
                case (true, UInt8(ascii: "M")): seconds += 60 * value
                case (true, UInt8(ascii: "S")): seconds += value
                default: return nil
                }
            }
        }
        guard number == nil, sawPart, !inTime || sawTimePart, months + days + seconds > 0 else { return nil }
        self.months = months
        self.days = days
        self.seconds = seconds
        self.description = text
    }

    /// `instant` (Unix ms, UTC) plus this duration: months first (the day clamped to the
    /// month's length), then days, then seconds.
    public func adding(to instant: Int64) -> Int64 {
        let dayMillis: Int64 = 86_400_000
        var day = instant >= 0 ? instant / dayMillis : (instant - dayMillis + 1) / dayMillis
        let withinDay = instant - day * dayMillis
        if months != 0 {
            var (year, month, dayOfMonth) = Self.civil(fromDays: day)
            let total = year * 12 + (month - 1) + months
            year = total >= 0 ? total / 12 : (total - 11) / 12
            month = total - year * 12 + 1
            dayOfMonth = min(dayOfMonth, Self.daysIn(month: month, year: year))
            day = Self.days(fromCivil: year, month, dayOfMonth)
        }
        day += days
        return day * dayMillis + withinDay + seconds * 1000
    }

    // Howard Hinnant's civil-calendar algorithms (proleptic Gregorian, days since 1970-01-01).
    static func civil(fromDays z: Int64) -> (Int64, Int64, Int64) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
