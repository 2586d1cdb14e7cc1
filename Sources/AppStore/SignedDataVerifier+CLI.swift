import JSON

/// What `iap-ledger verify --kind` names.
public enum SignedDataKind: String, Sendable, CaseIterable {
    case transaction, renewal, notification
}

extension SignedDataVerifier {
    /// Verifies `jws` exactly as ingestion does and returns the decoded payload as pretty JSON
    /// (sorted keys). For a notification, `data` also gets `transactionInfo` / `renewalInfo` (and
    /// `appData` its `appTransactionInfo`): the decoded (and verified) nested signed data.
    public func decodedJSON(kind: SignedDataKind, jws: String) throws(VerificationError) -> String {
        let trimmed = String(jws.filter { !$0.isWhitespace })
        let value: JSONValue
        switch kind {
        case .transaction: value = Self.reparse(try verifyTransaction(trimmed).rawJSON)
        case .renewal: value = Self.reparse(try verifyRenewalInfo(trimmed).rawJSON)
        case .notification:
            let n = try verifyNotification(trimmed)
            var object = Self.reparse(n.payload.rawJSON).objectValue ?? [:]
            if var data = object["data"]?.objectValue {
                if let t = n.transaction { data["transactionInfo"] = Self.reparse(t.rawJSON) }
                if let r = n.renewalInfo { data["renewalInfo"] = Self.reparse(r.rawJSON) }
                object["data"] = .object(data)
            }
            if var appData = object["appData"]?.objectValue, let app = n.appTransaction {
                appData["appTransactionInfo"] = Self.reparse(app.rawJSON)
                object["appData"] = .object(appData)
            }
            value = .object(object)
        }
        var out = ""
        Self.pretty(value, indent: "", into: &out)
        return out + "\n"
    }

    /// Bytes that already parsed once during verification.
    private static func reparse(_ bytes: [UInt8]) -> JSONValue { (try? JSONValue.parse(bytes)) ?? .null }

    private static func pretty(_ v: JSONValue, indent: String, into out: inout String) {
        let inner = indent + "  "
        switch v {
        case .array(let items) where !items.isEmpty:
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += inner
                pretty(item, indent: inner, into: &out)
                out += i == items.count - 1 ? "\n" : ",\n"
            }
            out += indent + "]"
        case .object(let fields) where !fields.isEmpty:
            out += "{\n"
            let keys = fields.keys.sorted()
            for (i, key) in keys.enumerated() {
                out += inner + String(decoding: JSONValue.string(key).serialized(), as: UTF8.self) + ": "
                pretty(fields[key]!, indent: inner, into: &out)
                out += i == keys.count - 1 ? "\n" : ",\n"
            }
            out += indent + "}"
        default:
            out += String(decoding: v.serialized(), as: UTF8.self)
        }
    }
}
