import EventStore
import Foundation
import Synchronization

/// API keys: `iap_<random>` secrets shown once, stored as SHA-256 hashes computed by
/// PostgreSQL (so no crypto is hand-rolled here), with scopes read/write/admin.
public struct APIKeys: Sendable {
    public static let scopes: Set<String> = ["read", "write", "admin"]

    public struct Key: Sendable, Equatable {
        public var name: String
        public var scopes: [String]
        public var createdAt: String
        public var revokedAt: String?
    }

    public enum Failure: Error, CustomStringConvertible, Sendable {
        case invalidName(String)
        case invalidScopes(String)
        case duplicateName(String)
        case notFound(String)
        case database(DatabaseError)

        public var description: String {
            switch self {
            case .invalidName(let name): "invalid key name \"\(name)\": use letters, digits, '-', '_' or '.' (1–64)"
            case .invalidScopes(let text): "invalid scopes \"\(text)\": a comma-separated subset of read,write,admin"
            case .duplicateName(let name): "a key named \"\(name)\" already exists"
            case .notFound(let name): "no active key named \"\(name)\""
            case .database(let error): "\(error)"
            }
        }
    }

    public init() {}

    /// Parses `read,write` into a sorted scope list, refusing unknown words.
    public static func parseScopes(_ text: String) throws(Failure) -> [String] {
        let words = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !words.isEmpty, words.allSatisfy({ scopes.contains($0) }) else { throw .invalidScopes(text) }
        return Array(Set(words)).sorted()
    }

    /// Creates a key and returns its secret: the only time it is ever visible.
    public func create(name: String, scopes: [String], on connection: Connection) throws(Failure) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_."))
        guard (1...64).contains(name.count), name.unicodeScalars.allSatisfy({ allowed.contains($0) }) else {
            throw .invalidName(name)
        }
        var generator = SystemRandomNumberGenerator()  // getrandom(2) on Linux
        let random = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let secret = "iap_" + random.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        do {
            _ = try connection.query(
                "INSERT INTO auth.api_keys (name, secret_hash, scopes) VALUES ($1, sha256(convert_to($2, 'UTF8')), $3::text[])",
                [name, secret, "{" + scopes.joined(separator: ",") + "}"])
        } catch {
            if error.sqlState == "23505" { throw .duplicateName(name) }
            throw .database(error)
        }
        return secret
    }

    public func list(on connection: Connection) throws(Failure) -> [Key] {
        do {
            let rows = try connection.query(
                """
                SELECT name, array_to_string(scopes, ','),
                       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                       to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                FROM auth.api_keys ORDER BY name
                """, [])
            return (0..<rows.count).map { row in
                Key(
                    name: rows[row, 0] ?? "", scopes: (rows[row, 1] ?? "").split(separator: ",").map(String.init),
                    createdAt: rows[row, 2] ?? "", revokedAt: rows[row, 3])
            }
        } catch {
            throw .database(error)
        }
    }

    public func revoke(name: String, on connection: Connection) throws(Failure) {
        do {
            let rows = try connection.query(
                "UPDATE auth.api_keys SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING name",
                [name])
            if rows.count == 0 { throw Failure.notFound(name) }
        } catch let failure as Failure {
            throw failure
        } catch let error as DatabaseError {
            throw .database(error)
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
    }

    /// The name and scopes of an active key, or nil for an unknown or revoked secret.
    public func lookup(secret: String, on connection: Connection) throws(DatabaseError) -> (
        name: String, scopes: Set<String>
    )? {
        let rows = try connection.query(
            "SELECT name, array_to_string(scopes, ',') FROM auth.api_keys WHERE secret_hash = sha256(convert_to($1, 'UTF8')) AND revoked_at IS NULL",
            [secret])
        guard rows.count == 1, let name = rows[0, 0], let text = rows[0, 1] else { return nil }
        return (name, Set(text.split(separator: ",").map(String.init)))
    }
}

extension String {
    package func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
