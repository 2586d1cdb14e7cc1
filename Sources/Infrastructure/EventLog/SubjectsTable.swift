import AppStore
import EventStore

/// The one owner of the SQL of `identity.subjects` (migration 0047: each user id's subject and
/// key) and `identity.tokens` (0049: each appAccountToken's). Written with the first event that
/// names them, in its transaction; deleted by erasure.
package enum SubjectsTable {
    /// Writes subjects minted (or legacy ones keyed) and token subjects minted for an append,
    /// right after it in its transaction (es.append must be the first write). Every writer of a
    /// user holds the user's stream lock, and every minter of a token its mint lock
    /// (`tokenLock`), so nobody minted theirs meanwhile; `saved` below their count means someone
    /// did (a user named by another's event only), and the unit of work is refused.
    /// Existing rows are probed by index, one user at a time (`OFFSET 0` keeps the NOT EXISTS a
    /// probe, `= ANY(ARRAY(…))` gives the UPDATE its index): as plain joins, a generic plan made
    /// on a database not yet analyzed hashed every subject on each call (FreshDatabasePlanTests).
    package static func save(_ subjects: [Subject], tokens: [TokenSubject]) -> Query {
        """
        WITH t(t, s, k) AS (
            SELECT * FROM unnest(\(array: tokens.map(\.token))::text[], \(array: tokens.map(\.subject))::text[],
                \(array: tokens.map { Hex.encode($0.key) })::text[])),
        tokens AS (
            INSERT INTO identity.tokens (token, subject, key) SELECT t.t, t.s, decode(t.k, 'hex') FROM t
            ON CONFLICT DO NOTHING RETURNING 1),
        c(u, s, k) AS (
            SELECT * FROM unnest(\(array: subjects.map(\.userId))::text[], \(array: subjects.map(\.subject))::text[],
                \(array: subjects.map { Hex.encode($0.key ?? []) })::text[])),
        inserted AS (
            INSERT INTO identity.subjects (user_id, subject, key)
            SELECT c.u, c.s, decode(c.k, 'hex') FROM c
            WHERE NOT EXISTS (SELECT 1 FROM identity.subjects x WHERE x.user_id = c.u OFFSET 0)
            ON CONFLICT DO NOTHING RETURNING 1),
        keyed AS (
            UPDATE identity.subjects x SET key = decode(c.k, 'hex') FROM c
            WHERE x.user_id = ANY(ARRAY(SELECT c.u FROM c)) AND x.user_id = c.u AND x.subject = c.s
                AND x.key IS NULL RETURNING 1)
        SELECT (SELECT count(*) FROM inserted) + (SELECT count(*) FROM keyed) + (SELECT count(*) FROM tokens) AS saved
        """
    }

    /// The advisory lock a writer takes before minting a token's subject (sorted, after all its
    /// other locks: no writer waits for anything else while holding one).
    package static func tokenLock(_ token: String) -> String { "identity.token:" + token }

    /// The token subjects of `tokens` (lowercased) that exist.
    package static func existing(tokens: [String]) -> Query {
        "SELECT token, subject, encode(key, 'hex') FROM identity.tokens WHERE token = ANY(\(array: tokens)::text[])"
    }

    /// The rows of these token subjects.
    package static func existing(tokenSubjects: [String]) -> Query {
        "SELECT token, subject, encode(key, 'hex') FROM identity.tokens WHERE subject = ANY(\(array: tokenSubjects)::text[])"
    }

    /// Every token subject (a pass over the whole log decodes with them).
    package static let allTokens: Query = "SELECT token, subject, encode(key, 'hex') FROM identity.tokens"

    /// Rows of the token queries above.
    package static func tokens(from rows: Rows) -> [TokenSubject] {
        (0..<rows.count).compactMap { row in
            guard let token = rows[row, 0], let subject = rows[row, 1], let key = rows[row, 2].flatMap(Hex.decode)
            else { return nil }
            return TokenSubject(token: token, subject: subject, key: key)
        }
    }

    /// The subjects of `users` that have one (reads never mint).
    package static func existing(users: [String]) -> Query {
        "SELECT user_id, subject, encode(key, 'hex') FROM identity.subjects WHERE user_id = ANY(\(array: users)::text[])"
    }

    /// The rows of these subjects (an event naming another user names their subject).
    package static func existing(subjects: [String]) -> Query {
        "SELECT user_id, subject, encode(key, 'hex') FROM identity.subjects WHERE subject = ANY(\(array: subjects)::text[])"
    }

    /// Registers user streams named by a user id (written in clear, by code older than 0047)
    /// that have no subject: their subject is their id, as 0047 registered those it found. A
    /// replay's swap runs it under its locks, after which older instances no longer write.
    /// The streams that have a subject (all but a few once 0047 ran) are set aside first, and only
    /// the rest are checked for a first event in clear, one index probe each (`OFFSET 0` keeps
    /// the planner from merging the two steps): as one join with both conditions, the planner
    /// hashed every version-1 event of the log instead, a scan of `es.events` under the locks
    /// (345 ms against 75 ms for a 1M-event log, 100k users, none left to register).
    package static let registerLegacyStreams = """
        INSERT INTO identity.subjects (user_id, subject)
        SELECT substr(s.stream_id, 6), substr(s.stream_id, 6)
        FROM (SELECT s.stream_id FROM es.streams s
              WHERE s.stream_id LIKE 'user:%'
                AND NOT EXISTS (SELECT 1 FROM identity.subjects i WHERE i.subject = substr(s.stream_id, 6))
              OFFSET 0) s
        CROSS JOIN LATERAL (SELECT 1 FROM es.events e
                            WHERE e.stream_id = s.stream_id AND e.version = 1 AND e.schema_version = 1 LIMIT 1) first
        ON CONFLICT DO NOTHING;
        """

    /// Every subject (a pass over the whole log decodes with them).
    package static let all: Query = "SELECT user_id, subject, encode(key, 'hex') FROM identity.subjects"

    /// Rows of the queries above.
    package static func subjects(from rows: Rows) -> Subjects {
        var subjects = Subjects()
        subjects.reserveCapacity(rows.count)
        for row in 0..<rows.count {
            guard let userId = rows[row, 0], let subject = rows[row, 1] else { continue }
            subjects.insert(Subject(userId: userId, subject: subject, key: rows[row, 2].flatMap(Hex.decode)))
        }
        return subjects
    }
}
