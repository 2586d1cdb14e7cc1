import EventStore
import Foundation
import HTTP
import Synchronization
import SystemCalls

/// Resolves `Authorization: Bearer` secrets to scopes. Answers are cached briefly in memory
/// (keyed by the secret, never logged) so an authenticated read stays one round trip to
/// PostgreSQL. A key revoked by another process (`iap-ledger keys revoke`) stops working within
/// `positiveTTL` (`ServiceApp.Options.keyCacheMillis`, `IAP_LEDGER_KEY_CACHE_SECONDS`).
///
/// When PostgreSQL cannot be asked, the secret is neither valid nor invalid: the lookup is
/// remembered as *unavailable* so that the service answers 503 `store_unavailable` (retry)
/// instead of a 401 that would make a client throw away a good key.
package final class KeyAuthenticator: Sendable {
    private struct Entry {
        var name: String?
        var scopes: Set<String>?
        var expiresAt: Int64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Secrets whose last lookup failed because the store was unreachable.
        var unavailable: Set<String> = []
    }

    private let pool: ConnectionPool
    private let keys = APIKeys()
    private let state = PlainMutex(State())
    private let positiveTTL: Int64
    private let negativeTTL: Int64
    private static let maxEntries = 10_000

    /// Default time a valid key's scopes are trusted without asking PostgreSQL again.
    package static let defaultPositiveTTLMillis: Int64 = 30_000

    package init(
        pool: ConnectionPool, positiveTTLMillis: Int64 = defaultPositiveTTLMillis, negativeTTLMillis: Int64 = 2_000
    ) {
        self.pool = pool
        self.positiveTTL = max(0, positiveTTLMillis)
        self.negativeTTL = max(0, min(negativeTTLMillis, positiveTTLMillis))
    }

    /// The router's authenticator: scopes of the key, or nil (401).
    package func scopes(forSecret secret: String) -> Set<String>? {
        entry(for: secret)?.scopes
    }

    /// The key's name for event metadata and logs.
    package func keyName(of request: HTTPRequest) -> String? {
        guard let secret = Self.bearerSecret(of: request) else { return nil }
        return entry(for: secret)?.name
    }

    /// Whether the last lookup of the request's key failed because PostgreSQL was unreachable
    /// (so a 401 for it really means "cannot tell now").
    package func lookupWasUnavailable(for request: HTTPRequest) -> Bool {
        guard let secret = Self.bearerSecret(of: request) else { return false }
        return state.withLock { $0.unavailable.contains(secret) }
    }

    private static func bearerSecret(of request: HTTPRequest) -> String? {
        bearerSecret(authorization: request.header("authorization"))
    }

    /// The key of an `Authorization: Bearer <key>` header (scheme case-insensitive, blanks
    /// around the key ignored); nil for anything else.
    static func bearerSecret(authorization header: String?) -> String? {
        guard let header, header.utf8.count > 7,
            header.prefix(7).lowercased() == "bearer "
        else { return nil }
        // Spaces and tabs trimmed byte-wise: Foundation's trimmingCharacters cost a CharacterSet
        // walk on every request, and a key is ASCII (`iap_` and base62).
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        let bytes = header.utf8.dropFirst(7)
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) })
        else { return nil }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    private func entry(for secret: String) -> Entry? {
        let now = Timestamp.nowMillis()
        if let hit = state.withLock({ $0.entries[secret] }), hit.expiresAt > now { return hit }
        guard secret.hasPrefix("iap_"), secret.utf8.count <= 128 else { return nil }
        let found: (name: String, scopes: Set<String>)?
        do {
            found = try pool.withConnection { connection in try keys.lookup(secret: secret, on: connection) }
        } catch {
            state.withLock { state in
                if state.unavailable.count >= Self.maxEntries { state.unavailable.removeAll(keepingCapacity: true) }
                state.unavailable.insert(secret)
            }
            return nil
        }
        let entry = Entry(
            name: found?.name, scopes: found?.scopes, expiresAt: now + (found == nil ? negativeTTL : positiveTTL))
        state.withLock { state in
            state.unavailable.remove(secret)
            if state.entries.count >= Self.maxEntries { state.entries.removeAll(keepingCapacity: true) }
            state.entries[secret] = entry
        }
        return entry
    }
}
