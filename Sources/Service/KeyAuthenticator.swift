import EventStore
import HTTP
import Synchronization

/// Resolves `Authorization: Bearer` secrets to scopes. Answers are cached briefly in memory
/// (keyed by the secret, never logged) so an authenticated read stays one round trip to
/// PostgreSQL; a revoked key stops working within `positiveTTL`.
final class KeyAuthenticator: Sendable {
    private struct Entry {
        var name: String?
        var scopes: Set<String>?
        var expiresAt: Int64
    }

    private let pool: ConnectionPool
    private let keys = APIKeys()
    private let cache = Mutex<[String: Entry]>([:])
    private let positiveTTL: Int64
    private let negativeTTL: Int64
    private static let maxEntries = 10_000

    init(pool: ConnectionPool, positiveTTLMillis: Int64 = 30_000, negativeTTLMillis: Int64 = 2_000) {
        self.pool = pool
        self.positiveTTL = positiveTTLMillis
        self.negativeTTL = negativeTTLMillis
    }

    /// The router's authenticator: scopes of the key, or nil (401).
    func scopes(forSecret secret: String) -> Set<String>? {
        entry(for: secret)?.scopes
    }

    /// The key's name for event metadata and logs.
    func keyName(of request: HTTPRequest) -> String? {
        guard let header = request.header("authorization"), header.hasPrefix("Bearer ") else { return nil }
        return entry(for: String(header.dropFirst(7)))?.name
    }

    private func entry(for secret: String) -> Entry? {
        let now = Timestamp.nowMillis()
        if let hit = cache.withLock({ $0[secret] }), hit.expiresAt > now { return hit }
        guard secret.hasPrefix("iap_"), secret.utf8.count <= 128 else { return nil }
        let found: (name: String, scopes: Set<String>)?
        do {
            found = try pool.withConnection { connection in try keys.lookup(secret: secret, on: connection) }
        } catch {
            return nil  // database down: unauthenticated; the data routes would answer 503 anyway
        }
        let entry = Entry(name: found?.name, scopes: found?.scopes,
                          expiresAt: now + (found == nil ? negativeTTL : positiveTTL))
        cache.withLock { cache in
            if cache.count >= Self.maxEntries { cache.removeAll(keepingCapacity: true) }
            cache[secret] = entry
        }
        return entry
    }
}
