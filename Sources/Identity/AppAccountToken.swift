import Infrastructure
import JSON

/// App Store appAccountTokens as api.md §7 takes them: UUIDs, compared case-insensitively, so
/// stored and looked up lowercased.
package enum AppAccountToken {
    /// `value` lowercased if it is a UUID (8-4-4-4-12 hex digits, any case), else nil.
    package static func normalized(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        guard bytes.count == 36 else { return nil }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == 0x2D else { return nil }
            } else {
                let hex =
                    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46)
                guard hex else { return nil }
            }
        }
        return value.lowercased()
    }

    /// A fresh random UUID (RFC 4122 version 4), lowercased. The bytes come from
    /// `SystemRandomNumberGenerator` (getrandom(2) on Linux), the source API keys are made from:
    /// a token must not be guessable, or anyone could claim another person's purchases.
    package static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<2).flatMap { _ -> [UInt8] in
            let word: UInt64 = generator.next()
            return (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) }
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40  // version 4
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // the RFC 4122 variant
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(0x2D) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The body of `POST /v1/users/{userId}/app-account-token`: `{}` (mint) or
    /// `{"appAccountToken": "<UUID>"}` (register); the token lowercased, nil to mint.
    package static func parseRequest(_ body: [UInt8]) throws(ServiceError) -> String? {
        let blank = !body.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 })
        if blank { return nil }
        guard let value = try? JSONValue.parse(body), case .object(let object) = value else {
            throw .invalidRequest("the body must be a JSON object: {} or {\"appAccountToken\": \"<UUID>\"}")
        }
        for name in object.keys.sorted() where name != "appAccountToken" {
            throw .invalidRequest("\(name): unknown field (expected appAccountToken)")
        }
        guard let field = object["appAccountToken"] else { return nil }
        guard let text = field.stringValue, let token = normalized(text) else {
            throw .invalidRequest("appAccountToken must be a UUID such as 7e3fb20b-4cdb-47cc-936d-99d65f608138")
        }
        return token
    }
}
