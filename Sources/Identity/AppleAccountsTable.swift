import EventStore
import Infrastructure
import Ledger

/// The one owner of `proj.apple_accounts`' SQL (migration 0044): which users bought with which
/// Apple Account (`appTransactionId`). Written by ingest with the facts, read by ingest before
/// an attempt (whom an appTransactionId was seen with), rebuilt from the log by a replay.
package enum AppleAccountsTable {
    /// One Apple Account seen on one user's chain.
    package struct Use: Hashable, Sendable {
        package var appTransactionId: String
        package var userId: String

        package init(appTransactionId: String, userId: String) {
            self.appTransactionId = appTransactionId
            self.userId = userId
        }
    }

    /// Records uses (a use recorded before stays as it was).
    package static func insert(_ uses: [Use]) -> Query? {
        guard !uses.isEmpty else { return nil }
        return """
            INSERT INTO proj.apple_accounts (app_transaction_id, user_id)
            SELECT * FROM unnest(\(array: uses.map(\.appTransactionId))::text[], \(array: uses.map(\.userId))::text[])
            ON CONFLICT DO NOTHING
            """
    }

    /// The first users seen with each of `appTransactionIds` (at most one more than a hint
    /// names, so the user asking is never the one that crowds out the others); read with
    /// `users(from:)`.
    package static func users(of appTransactionIds: [String]) -> Query {
        """
        SELECT id, seen.user_id FROM unnest(\(array: appTransactionIds)::text[]) AS id,
        LATERAL (SELECT user_id FROM proj.apple_accounts WHERE app_transaction_id = id
                 ORDER BY first_seen_at, user_id LIMIT \(Account.sameAppleAccountLimit + 1)::bigint) AS seen
        """
    }

    /// Every user seen with each of `appTransactionIds` (a RESCIND_CONSENT tells them all); read
    /// with `users(from:)`.
    package static func allUsers(of appTransactionIds: [String]) -> Query {
        """
        SELECT app_transaction_id, user_id FROM proj.apple_accounts
        WHERE app_transaction_id = ANY(\(array: appTransactionIds)::text[])
        """
    }

    /// appTransactionId → its users, from rows of `users(of:)` or `allUsers(of:)`.
    package static func users(from rows: Rows) -> [String: Set<String>] {
        var users: [String: Set<String>] = [:]
        for row in 0..<rows.count {
            if let id = rows[row, 0], let user = rows[row, 1] { users[id, default: []].insert(user) }
        }
        return users
    }

    /// An alias's Apple Accounts are its target's (api.md §7; the merge's last write, after the
    /// token rows: the order a replay's swap rebuilds the two tables in).
    package static func move(alias: String, to userId: String) -> Query {
        """
        WITH moved AS (DELETE FROM proj.apple_accounts WHERE user_id = \(alias)
                       RETURNING app_transaction_id, first_seen_at)
        INSERT INTO proj.apple_accounts (app_transaction_id, user_id, first_seen_at)
        SELECT app_transaction_id, \(userId), first_seen_at FROM moved
        ON CONFLICT DO NOTHING
        """
    }

    /// After a replay's rebuild: an alias's rows are its target's (the alias index rebuilt first).
    package static let pointAtTargets = """
        INSERT INTO proj.apple_accounts (app_transaction_id, user_id, first_seen_at)
        SELECT p.app_transaction_id, a.user_id, p.first_seen_at
        FROM proj.apple_accounts p JOIN proj.user_aliases a ON p.user_id = a.alias
        ON CONFLICT DO NOTHING;
        DELETE FROM proj.apple_accounts p USING proj.user_aliases a WHERE p.user_id = a.alias;
        """

    /// A replay rebuilds the table from the log (migration 0044's function, as 0047 left it: the
    /// one place the rule is written), in its swap transaction. It reads only the transactions
    /// that carry an appTransactionId and their chains' claims, through 0053's partial indexes.
    package static let rebuild = "SELECT proj.rebuild_apple_accounts();"
}
