import JSON
import Ledger

extension ConfigurationReader {
    /// `consumption` (docs/api.md §5): how to answer Apple's CONSUMPTION_REQUEST for this app.
    package func consumption(_ value: JSONValue, at key: String) throws(ConfigurationError) -> ConsumptionInfo.Settings
    {
        let members = try object(value, at: key)
        try allowOnly(["customerConsented", "sampleContentProvided", "refundPreference"], in: members, at: key)
        func flag(_ name: String) throws(ConfigurationError) -> Bool? {
            guard let entry = members[name], !entry.isNull else { return nil }
            guard let flag = entry.boolValue else { throw error("\(key).\(name)", "expected true or false") }
            return flag
        }
        guard let consented = try flag("customerConsented") else {
            throw error(
                "\(key).customerConsented", "is required (whether your customers consented to sharing consumption data)"
            )
        }
        var preference: ConsumptionInfo.RefundPreference?
        if let entry = members["refundPreference"], !entry.isNull {
            let word = try string(entry, at: "\(key).refundPreference")
            guard let known = ConsumptionInfo.RefundPreference(rawValue: word) else {
                let words = ConsumptionInfo.RefundPreference.allCases.map(\.rawValue).joined(separator: ", ")
                throw error(
                    "\(key).refundPreference", "unknown refund preference \"\(word)\" (expected one of: \(words))")
            }
            preference = known
        }
        return ConsumptionInfo.Settings(
            customerConsented: consented, sampleContentProvided: try flag("sampleContentProvided") ?? false,
            refundPreference: preference)
    }
}
