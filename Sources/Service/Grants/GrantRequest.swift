import AppStore
import Infrastructure
import JSON
import Ledger

/// The body of `POST /v1/users/{userId}/grants` (api.md §6), checked field by field: every
/// refusal is a 400 `invalid_request` whose detail starts with the field's name.
struct GrantRequest: Sendable, Equatable {
    var entitlement: String
    var term: PromotionalGrantTerm
    var reason: String
    var idempotencyKey: String?

    static let fields: Set<String> = ["entitlement", "duration", "until", "reason", "idempotencyKey"]
    static let maxEntitlement = 128
    static let maxReason = 500
    static let maxIdempotencyKey = 200

    /// Parses `body`; `header` is the `Idempotency-Key` header; `now` judges `until`.
    static func parse(_ body: [UInt8], idempotencyHeader header: String?, now: Int64) throws(ServiceError)
        -> GrantRequest
    {
        guard let value = try? JSONValue.parse(body), case .object(let object) = value else {
            throw .invalidRequest(
                "the body must be a JSON object: {\"entitlement\", \"duration\" or \"until\", \"reason\"?}")
        }
        for name in object.keys.sorted() where !fields.contains(name) {
            throw .invalidRequest(
                "\(name): unknown field (expected entitlement, duration or until, reason, idempotencyKey)")
        }
        let entitlement = try text(object, "entitlement", limit: maxEntitlement)
        guard let entitlement else { throw .invalidRequest("entitlement is required") }
        let duration = try text(object, "duration", limit: 64)
        let until = try text(object, "until", limit: 64)
        let term: PromotionalGrantTerm
        switch (duration, until) {
        case (let duration?, nil):
            guard let parsed = ISODuration(duration) else {
                throw .invalidRequest(
                    "duration must be an ISO 8601 duration such as P7D, P1M or PT12H, got \"\(duration)\"")
            }
            term = .duration(parsed)
        case (nil, let until?):
            guard let instant = RFC3339.parse(until) else {
                throw .invalidRequest("until must be an RFC 3339 timestamp, got \"\(until)\"")
            }
            guard instant > now else { throw .invalidRequest("until must be in the future, got \(until)") }
            term = .until(instant)
        case (nil, nil):
            throw .invalidRequest("duration or until is required (exactly one)")
        case (_?, _?):
            throw .invalidRequest("duration and until: send exactly one of them")
        }
        let reason = try text(object, "reason", limit: maxReason) ?? ""
        let bodyKey = try text(object, "idempotencyKey", limit: maxIdempotencyKey)
        var headerKey: String?
        if let header {
            guard !header.isEmpty, header.utf8.count <= maxIdempotencyKey, !RouteParameters.hasControlCharacters(header)
            else {
                throw .invalidRequest("Idempotency-Key must be 1…\(maxIdempotencyKey) bytes without control characters")
            }
            headerKey = header
        }
        if let bodyKey, let headerKey, bodyKey != headerKey {
            throw .invalidRequest("idempotencyKey: the body's differs from the Idempotency-Key header; send one")
        }
        return GrantRequest(entitlement: entitlement, term: term, reason: reason, idempotencyKey: bodyKey ?? headerKey)
    }

    /// A present field must be a non-empty string of at most `limit` bytes without control characters.
    private static func text(_ object: [String: JSONValue], _ name: String, limit: Int) throws(ServiceError) -> String?
    {
        guard let field = object[name] else { return nil }
        guard let value = field.stringValue else { throw .invalidRequest("\(name) must be a string") }
        guard !value.isEmpty, value.utf8.count <= limit else {
            throw .invalidRequest("\(name) must be 1…\(limit) bytes, got \(value.utf8.count)")
        }
        guard !RouteParameters.hasControlCharacters(value) else {
            throw .invalidRequest("\(name) must not contain control characters")
        }
        return value
    }

    /// The grant's id: `grt_` and 32 hex digits. With an idempotency key it is derived from
    /// (userId, key) by SHA-256, so a retry finds the first grant by id alone and two users'
    /// keys never meet; without one it is random (each POST is a new grant).
    static func grantId(userId: String, idempotencyKey: String?) -> String {
        if let idempotencyKey {
            return "grt_" + Digest.sha256Hex(Array(userId.utf8) + [0] + Array(idempotencyKey.utf8)).prefix(32)
        }
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<2).map { _ in
            let word = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - word.count) + word
        }
        return "grt_" + hex.joined()
    }

    /// `grt_` and 32 lowercase hex digits (what `grantId(…)` makes); anything else cannot name a grant.
    static func isGrantId(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        return bytes.count == 36 && value.hasPrefix("grt_")
            && bytes[4...].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
