import EventStore
import Foundation
import JSON

/// Daily exchange rates into one reporting currency (api.md §3.1, `iap-ledger fx import`): a
/// row says one unit of `currency` was worth `rate` units of `base` on `date`. They are recorded as
/// events (`ExchangeRatesRecorded` on the `fx` stream, which no user fold reads), so every
/// converted figure follows from the log: new rates restate the past, and the overview's `asOf`
/// reproduces the figures the rates recorded by then gave. `analytics.exchange_rates` is their
/// projection and `analytics.fx_rate` the one rule that picks a rate.
package enum ExchangeRates {
    package static let stream = "fx"
    package static let eventType = "ExchangeRatesRecorded"

    package struct Rate: Equatable, Sendable {
        /// `YYYY-MM-DD` (UTC day).
        package var date: String
        /// ISO 4217, three capital letters.
        package var currency: String
        /// A positive decimal, as written (kept exact: PostgreSQL reads it as numeric).
        package var rate: String
    }

    package struct ParseError: Error, CustomStringConvertible, Sendable {
        package var description: String
    }

    package static func isCurrency(_ text: String) -> Bool {
        text.utf8.count == 3 && text.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A }
    }

    /// The CSV `date,currency,rate` (that header first; a final newline optional; no quoting — no
    /// field needs it). Every mistake names the file and line: one bad row refuses the whole file,
    /// so an import is all or nothing.
    package static func parse(_ text: String, file: String, base: String) throws(ParseError) -> [Rate] {
        // "\r\n" is one Character in Swift: both line ends are separators.
        var lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        if lines.last == "" { lines.removeLast() }
        guard let header = lines.first,
            header.split(separator: ",", omittingEmptySubsequences: false)
                .map({ $0.trimmingCharacters(in: .whitespaces) }) == ["date", "currency", "rate"]
        else { throw ParseError(description: "\(file):1: the header must be date,currency,rate") }
        var rates: [Rate] = []
        var seen: [String: Int] = [:]
        for (index, line) in lines.enumerated().dropFirst() {
            let at = "\(file):\(index + 1)"
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard fields.count == 3 else {
                throw ParseError(description: "\(at): expected date,currency,rate, got \"\(line)\"")
            }
            let (date, currency, rate) = (fields[0], fields[1], fields[2])
            guard isDay(date) else { throw ParseError(description: "\(at): date must be YYYY-MM-DD, got \"\(date)\"") }
            guard isCurrency(currency) else {
                throw ParseError(
                    description: "\(at): currency must be an ISO 4217 code (three capital letters), got \"\(currency)\""
                )
            }
            guard currency != base else {
                throw ParseError(description: "\(at): \(currency) is the base currency (always 1)")
            }
            guard isPositiveDecimal(rate) else {
                throw ParseError(description: "\(at): rate must be a positive decimal number, got \"\(rate)\"")
            }
            if let first = seen[date + currency] {
                throw ParseError(description: "\(at): \(currency) on \(date) is also on line \(first)")
            }
            seen[date + currency] = index + 1
            rates.append(Rate(date: date, currency: currency, rate: rate))
        }
        guard !rates.isEmpty else { throw ParseError(description: "\(file): no rates after the header") }
        return rates
    }

    /// A real calendar day, `YYYY-MM-DD`.
    package static func isDay(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), day >= 1
        else { return false }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return day <= days
    }

    /// Digits with at most one point, not zero: `1.0542`, `148`, `0.0067`.
    package static func isPositiveDecimal(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count),
            parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            text.utf8.count <= 40
        else { return false }
        return text.contains { $0 != "0" && $0 != "." }
    }

    /// The event: `{"base", "rates": [{"date", "currency", "rate"}], "source"}`.
    package static func eventData(_ rates: [Rate], base: String, source: String?) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + rates.count * 48)
        w.beginObject()
        w.key("base")
        w.string(base)
        w.key("rates")
        w.beginArray()
        for rate in rates {
            w.beginObject()
            w.key("date")
            w.string(rate.date)
            w.key("currency")
            w.string(rate.currency)
            w.key("rate")
            w.string(rate.rate)
            w.endObject()
        }
        w.endArray()
        w.key("source")
        w.stringOrNull(source)
        w.endObject()
        return w.bytes
    }

    /// Appends one `ExchangeRatesRecorded` event (any version of the `fx` stream: imports are
    /// independent facts, the newest recorded winning for a day and currency).
    package static func record(_ rates: [Rate], base: String, source: String?, on connection: Connection)
        throws(DatabaseError)
    {
        _ = try EventStore().append(
            to: stream, expectedVersion: .any,
            events: [NewEvent(type: eventType, data: eventData(rates, base: base, source: source))], on: connection)
    }
}
