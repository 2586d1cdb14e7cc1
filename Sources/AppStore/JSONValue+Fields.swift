import JSON

/// Tolerant field accessors used by the payload models: a field of the wrong type reads as absent.
extension JSONValue {
    /// A string field; numeric lexemes are accepted too (ids are numeric-looking strings).
    package func string(_ key: String) -> String? {
        switch self[key] {
        case .string(let s)?: return s
        case .number(let n)?: return n
        default: return nil
        }
    }
    /// Milliseconds since the epoch; fractional values (Xcode) are truncated.
    package func millis(_ key: String) -> Int64? { self[key]?.int64Value }
    package func int(_ key: String) -> Int? { self[key]?.int64Value.flatMap { Int(exactly: $0) } }
    package func int64(_ key: String) -> Int64? { self[key]?.int64Value }
    package func bool(_ key: String) -> Bool? { self[key]?.boolValue }
    package func strings(_ key: String) -> [String]? { self[key]?.arrayValue?.compactMap(\.stringValue) }
    /// A nested object kept as JSON (Advanced Commerce details and the like).
    package func object(_ key: String) -> JSONValue? {
        guard let v = self[key], v.objectValue != nil else { return nil }
        return v
    }
}
