/// The rules of the parameters many rooms' routes take, in one place (the OpenAPI document's
/// patterns say the same).
package enum RouteParameters {
    /// The rules of every user route's `userId`.
    package static func validUserId(_ value: String?, field: String = "userId") throws(ServiceError) -> String {
        guard let value, !value.isEmpty, value.utf8.count <= 256 else {
            throw .invalidRequest("\(field) must be a non-empty string of at most 256 bytes")
        }
        guard !Self.hasControlCharacters(value) else {
            throw .invalidRequest("\(field) must not contain control characters")
        }
        return value
    }

    /// Apple's ids are digits; anything that cannot be a path segment of Apple's URL is refused here.
    package static func originalTransactionId(_ value: String?) throws(ServiceError) -> String {
        guard let value, !value.isEmpty, value.utf8.count <= 128,
            value.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D
                    || $0 == 0x5F
            })
        else { throw .invalidRequest("originalTransactionId must be 1…128 letters, digits, - or _") }
        return value
    }

    /// C0 controls and DEL (what the OpenAPI document's `pattern` for ids excludes).
    package static func hasControlCharacters(_ value: String) -> Bool {
        value.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }
}
