import Changes
import EventStore
import Infrastructure

// The SQL of an erasure (api.md §7, `Identities.erase`), each statement with the owner of its
// table: what is deleted, and what is renamed to the person's opaque subject (their money stays).

extension SubjectsTable {
    /// Destroys the keys: the users' subjects and the token subjects, and moves the erasure
    /// epoch (the document caches drop everything: `UserDocumentsTable.changes`).
    package static func erase(users: [String], tokenSubjects: [String]) -> Query {
        """
        WITH users AS (DELETE FROM identity.subjects WHERE user_id = ANY(\(array: users)::text[]) RETURNING 1),
        tokens AS (DELETE FROM identity.tokens WHERE subject = ANY(\(array: tokenSubjects)::text[]) RETURNING 1),
        epoch AS (UPDATE identity.erasure_epoch SET epoch = epoch + 1 RETURNING 1)
        SELECT (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM tokens) AS tokens,
            (SELECT count(*) FROM epoch) AS epoch
        """
    }

    /// The token subjects of these tokens (lowercased).
    package static func tokenSubjects(of tokens: [String]) -> Query {
        "SELECT token, subject, encode(key, 'hex') FROM identity.tokens WHERE token = ANY(\(array: tokens)::text[])"
    }

    /// The tokens stored on these chains' facts (token subjects, or tokens in clear from before
    /// migration 0049), with the subject's token where there is one.
    package static func tokensOnChains(_ chainStreams: [String]) -> Query {
        """
        SELECT DISTINCT e.data->>'appAccountToken' AS stored, t.token FROM es.events e
        LEFT JOIN identity.tokens t ON t.subject = e.data->>'appAccountToken'
        WHERE e.stream_id = ANY(\(array: chainStreams)::text[]) AND e.data ? 'appAccountToken'
        """
    }
}

extension UserDocumentsTable {
    package static func delete(users: [String]) -> Query {
        "DELETE FROM proj.users WHERE user_id = ANY(\(array: users)::text[])"
    }
}

extension UserAliasesTable {
    /// The aliases of an erased user go with it.
    package static func erase(userId: String) -> Query {
        "DELETE FROM proj.user_aliases WHERE user_id = \(userId) OR alias = \(userId)"
    }
}

extension AppAccountTokensTable {
    package static func tokens(of users: [String]) -> Query {
        "SELECT app_account_token FROM proj.app_account_tokens WHERE user_id = ANY(\(array: users)::text[])"
    }

    package static func delete(users: [String]) -> Query {
        "DELETE FROM proj.app_account_tokens WHERE user_id = ANY(\(array: users)::text[])"
    }
}

extension AppleAccountsTable {
    /// The other users who bought with an Apple Account of `users` (their documents name them).
    package static func neighbours(of users: [String]) -> Query {
        """
        SELECT DISTINCT o.user_id FROM proj.apple_accounts o
        JOIN proj.apple_accounts p ON p.app_transaction_id = o.app_transaction_id
        WHERE p.user_id = ANY(\(array: users)::text[]) AND o.user_id <> ALL(\(array: users)::text[])
        """
    }

    package static func delete(users: [String]) -> Query {
        "DELETE FROM proj.apple_accounts WHERE user_id = ANY(\(array: users)::text[])"
    }
}

extension ChainOwnersTable {
    /// The chains of `users` are owned by `subject` (what a replay of the erased log gives).
    package static func rename(users: [String], to subject: String) -> Query {
        "UPDATE proj.chain_owners SET user_id = \(subject) WHERE user_id = ANY(\(array: users)::text[])"
    }
}

extension WebhookDeliveriesTable {
    /// Every delivery of the person's changes (by id, or by subject since the feed is sealed).
    package static func delete(users: [String]) -> Query {
        "DELETE FROM webhooks.deliveries WHERE user_id = ANY(\(array: users)::text[])"
    }
}

extension AnalyticsProjector {
    /// Each user id becomes its subject, each token its token subject, in the analytics tables.
    package static func erase(users: [String], subjects: [String], tokens: [String], tokenSubjects: [String]) -> [Query]
    {
        [
            """
            UPDATE analytics.chain_owners o SET user_id = m.s
            FROM unnest(\(array: users)::text[], \(array: subjects)::text[]) AS m(u, s) WHERE o.user_id = m.u
            """,
            """
            UPDATE analytics.balance_movements b SET user_id = m.s
            FROM unnest(\(array: users)::text[], \(array: subjects)::text[]) AS m(u, s) WHERE b.user_id = m.u
            """,
            """
            UPDATE analytics.renewal_infos r SET app_account_token = m.s
            FROM unnest(\(array: tokens)::text[], \(array: tokenSubjects)::text[]) AS m(t, s)
            WHERE lower(r.app_account_token) = m.t
            """,
            """
            UPDATE analytics.renewal_info_versions r SET app_account_token = m.s
            FROM unnest(\(array: tokens)::text[], \(array: tokenSubjects)::text[]) AS m(t, s)
            WHERE lower(r.app_account_token) = m.t
            """,
        ]
    }
}
