import Foundation
import JSON

/// `--expires`: an RFC 3339 instant, or an ISO 8601 duration from now (`P1M`, `P7D`, `PT5M`).
enum TestkitExpiry: Sendable, Equatable {
    case at(Int64)
    case after(DateComponents)

    /// Parses the flag's value; nil when it is neither form.
    static func parse(_ text: String) -> TestkitExpiry? {
        if let millis = RFC3339.parse(text) { return .at(millis) }
        return duration(text).map(TestkitExpiry.after)
    }

    /// The expiry in milliseconds for a period starting at `start`.
    func millis(from start: Int64) -> Int64 {
        switch self {
        case .at(let millis): return millis
        case .after(let components): return Self.adding(components, to: start)
        }
    }

    /// Calendar arithmetic in UTC, as App Store periods are (P1M from 31 January ends 28/29 February).
    static func adding(_ components: DateComponents, to millis: Int64) -> Int64 {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let start = Date(timeIntervalSince1970: Double(millis) / 1000)
        guard let end = calendar.date(byAdding: components, to: start) else { return millis }
        return Int64((end.timeIntervalSince1970 * 1000).rounded())
    }

    /// `PnYnMnWnDTnHnMnS` with integer parts (at least one, all ≥ 0, not all zero).
    static func duration(_ text: String) -> DateComponents? {
        guard text.hasPrefix("P"), text.count > 1 else { return nil }
        var components = DateComponents()
        var digits = ""
        var inTime = false
        var any = false
        var timeParts = 0
        var total = 0
        for character in text.dropFirst() {
            if character.isASCII, character.isNumber {
                digits.append(character)
                continue
            }
            if character == "T" {
                guard !inTime, digits.isEmpty else { return nil }
                inTime = true
                continue
            }
            guard let value = Int(digits), value <= 100_000 else { return nil }
            digits = ""
            switch (inTime, character) {
            case (false, "Y"): components.year = value
            case (false, "M"): components.month = value
            case (false, "W"): components.day = (components.day ?? 0) + 7 * value
            case (false, "D"): components.day = (components.day ?? 0) + value
            case (true, "H"): components.hour = value
            case (true, "M"): components.minute = value
            case (true, "S"): components.second = value
            default: return nil
            }
            any = true
            if inTime { timeParts += 1 }
            total += value
        }
        guard digits.isEmpty, any, total > 0, !inTime || timeParts > 0 else { return nil }
        return components
    }
}
