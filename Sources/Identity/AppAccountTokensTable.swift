import EventStore
import Infrastructure

/// The one owner of `proj.app_account_tokens`' SQL (migration 0040): which user each registered
/// appAccountToken belongs to. Written with the AppAccountTokenRegistered event in the same
/// transaction; read by ingest (a token's claim) and by a registration (a token held by another
/// user); rebuilt from the log by a replay.
package enum AppAccountTokensTable {
    /// The advisory lock a registration takes on its token, with the user's stream, so two users
    /// racing for one token are decided one after the other (the primary key is the backstop).
    /// "appAccountToken:" sorts before "user:", the order every writer takes locks in.
    package static func lockName(_ token: String) -> String { "appAccountToken:" + token }

    /// Records a registration (the token lowercased).
    package static func insert(token: String, userId: String, minted: Bool) -> Query {
        """
        INSERT INTO proj.app_account_tokens (app_account_token, user_id, minted)
        VALUES (\(token), \(userId), \(minted ? "true" : "false")::boolean)
        """
    }

    /// The user of one token (no row: unregistered).
    package static func owner(of token: String) -> Query {
        "SELECT user_id FROM proj.app_account_tokens WHERE app_account_token = \(token)"
    }

    /// The users of `tokens` (lowercased) that are registered; read with `owners(from:)`.
    package static func owners(of tokens: [String]) -> Query {
        """
        SELECT app_account_token, user_id FROM proj.app_account_tokens
        WHERE app_account_token = ANY(\(array: tokens)::text[])
        """
    }

    /// token → user, from rows of `owners(of:)`.
    package static func owners(from rows: Rows) -> [String: String] {
        var owners: [String: String] = [:]
        for row in 0..<rows.count {
            if let token = rows[row, 0], let user = rows[row, 1] { owners[token] = user }
        }
        return owners
    }

    /// A replay rebuilds the table from the log: the first registration of each token wins, as
    /// it did when it was recorded (a later one by another user was refused, never appended).
    /// Run in the replay's swap transaction, which holds the table's lock. The events name
    /// subjects and token subjects (`identity.user_of` and `identity.token_of` give them back).
    /// Its events are read through `events_app_account_token_registered_idx` (migration 0053).
    package static let rebuild = """
        DELETE FROM proj.app_account_tokens;
        INSERT INTO proj.app_account_tokens (app_account_token, user_id, minted, registered_at)
        SELECT DISTINCT ON (identity.token_of(data->>'appAccountToken')) identity.token_of(data->>'appAccountToken'),
               identity.user_of(data->>'userId'), (data->>'minted')::boolean, recorded_at
        FROM es.events WHERE type = 'AppAccountTokenRegistered'
        ORDER BY identity.token_of(data->>'appAccountToken'), seq;
        """
}
