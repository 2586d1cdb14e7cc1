import EventStore

/// The one owner of `identity.subjects`' SQL (migration 0047): each user id's subject and key.
/// Written with the user's first sealed event, in its transaction; deleted by erasure.
enum SubjectsTable {
    /// Writes subjects minted (or legacy ones keyed) for an append, right after it in its
    /// transaction (es.append must be the first write). Every writer of a user holds the user's
    /// stream lock, so nobody minted theirs meanwhile; `saved` below that count means someone
    /// did (a user named by another's event only), and the unit of work is refused.
    static func save(_ subjects: [Subject]) -> Query {
        """
        WITH c(u, s, k) AS (
            SELECT * FROM unnest(\(array: subjects.map(\.userId))::text[], \(array: subjects.map(\.subject))::text[],
                \(array: subjects.map { Hex.encode($0.key ?? []) })::text[])),
        inserted AS (
            INSERT INTO identity.subjects (user_id, subject, key)
            SELECT c.u, c.s, decode(c.k, 'hex') FROM c
            WHERE NOT EXISTS (SELECT 1 FROM identity.subjects x WHERE x.user_id = c.u)
            ON CONFLICT DO NOTHING RETURNING 1),
        keyed AS (
            UPDATE identity.subjects x SET key = decode(c.k, 'hex') FROM c
            WHERE x.user_id = c.u AND x.subject = c.s AND x.key IS NULL RETURNING 1)
        SELECT (SELECT count(*) FROM inserted) + (SELECT count(*) FROM keyed) AS saved
        """
    }

    /// The subjects of `users` that have one (reads never mint).
    static func existing(users: [String]) -> Query {
        "SELECT user_id, subject, encode(key, 'hex') FROM identity.subjects WHERE user_id = ANY(\(array: users)::text[])"
    }

    /// The rows of these subjects (an event naming another user names their subject).
    static func existing(subjects: [String]) -> Query {
        "SELECT user_id, subject, encode(key, 'hex') FROM identity.subjects WHERE subject = ANY(\(array: subjects)::text[])"
    }

    /// Registers user streams named by a user id (written in clear, by code older than 0047)
    /// that have no subject: their subject is their id, as 0047 registered those it found. A
    /// replay's swap runs it under its locks, after which older instances no longer write.
    static let registerLegacyStreams = """
        INSERT INTO identity.subjects (user_id, subject)
        SELECT substr(s.stream_id, 6), substr(s.stream_id, 6) FROM es.streams s
        WHERE s.stream_id LIKE 'user:%'
          AND NOT EXISTS (SELECT 1 FROM identity.subjects i WHERE i.subject = substr(s.stream_id, 6))
          AND EXISTS (SELECT 1 FROM es.events e WHERE e.stream_id = s.stream_id AND e.version = 1 AND e.schema_version = 1)
        ON CONFLICT DO NOTHING;
        """

    /// Every subject (a pass over the whole log decodes with them).
    static let all: Query = "SELECT user_id, subject, encode(key, 'hex') FROM identity.subjects"

    /// Rows of the queries above.
    static func subjects(from rows: Rows) -> Subjects {
        var subjects = Subjects()
        for row in 0..<rows.count {
            guard let userId = rows[row, 0], let subject = rows[row, 1] else { continue }
            subjects.insert(Subject(userId: userId, subject: subject, key: rows[row, 2].flatMap(Hex.decode)))
        }
        return subjects
    }
}
