import JSON
import Ledger

/// A product of an app's catalog (`apps[].products.<id>`): its type, what it grants, and the
/// duration (non-renewing) or billing period and subscription group (subscription) it may declare.
extension ConfigurationReader {
    package func product(_ value: JSONValue, at key: String) throws(ConfigurationError) -> Configuration.Product {
        let members = try object(value, at: key)
        try allowOnly(["type", "entitlements", "grants", "duration", "period", "group"], in: members, at: key)
        guard let typeValue = members["type"] else { throw error("\(key).type", "is required") }
        let typeWord = try string(typeValue, at: "\(key).type")
        guard let kind = Configuration.Product.Kind(rawValue: typeWord) else {
            let words = Configuration.Product.Kind.allCases.map(\.rawValue).joined(separator: ", ")
            throw error("\(key).type", "unknown product type \"\(typeWord)\" (expected one of: \(words))")
        }
        var entitlements: [String] = []
        if let list = members["entitlements"] {
            for (index, entry) in try array(list, at: "\(key).entitlements").enumerated() {
                entitlements.append(try string(entry, at: "\(key).entitlements[\(index)]"))
            }
        }
        var grants: [String: Int64] = [:]
        if let map = members["grants"] {
            for (currency, amount) in try object(map, at: "\(key).grants") {
                guard let units = amount.int64Value, units > 0, case .number(let lexeme) = amount, Int64(lexeme) != nil
                else { throw error("\(key).grants.\(currency)", "expected a positive integer") }
                grants[currency] = units
            }
        }
        if kind == .consumable && !entitlements.isEmpty {
            throw error("\(key).entitlements", "a consumable grants balances, not entitlements")
        }
        var duration: String?
        if let value = members["duration"] {
            let text = try string(value, at: "\(key).duration")
            guard kind == .nonRenewing else {
                throw error("\(key).duration", "only a non-renewing product takes a duration")
            }
            guard ISODuration(text) != nil else {
                throw error(
                    "\(key).duration", "expected a positive ISO 8601 duration such as P7D, P1M or P1Y, got \"\(text)\"")
            }
            duration = text
        }
        var period: BillingPeriod?
        if let value = members["period"] {
            let text = try string(value, at: "\(key).period")
            guard kind == .subscription else {
                throw error("\(key).period", "only a subscription takes a billing period")
            }
            // Only Apple's six: any other length could not be billed, so it is a typo.
            guard let known = BillingPeriod(rawValue: text) else {
                let words = BillingPeriod.allCases.map(\.rawValue).joined(separator: ", ")
                throw error("\(key).period", "expected one of \(words) (ISO 8601), got \"\(text)\"")
            }
            period = known
        }
        var group: String?
        if let value = members["group"] {
            let text = try string(value, at: "\(key).group")
            guard kind == .subscription else {
                throw error("\(key).group", "only a subscription belongs to a subscription group")
            }
            guard !text.isEmpty else { throw error("\(key).group", "expected the subscription group's id, got \"\"") }
            group = text
        }
        return .init(
            kind: kind, entitlements: entitlements, grants: grants, duration: duration, period: period, group: group)
    }
}
