import EventStore

/// The one owner of `proj.users`' SQL: every statement that writes or reads the rendered
/// documents (ingest, debits, catalog changes and replays alike), and how a replay builds,
/// loads and swaps in its successor `proj.users_next`.
package enum UserDocumentsTable {
    /// The live table, or the one a replay is building.
    package enum Table {
        case live, next

        package var name: StaticString {
            switch self {
            case .live: "proj.users"
            case .next: "proj.users_next"
            }
        }
    }

    /// One document (a plain VALUES row: its plan is cached, where unnest over bound arrays is
    /// planned anew on every execution).
    package static func upsert(userId: String, version: Int64, document: String, renderedAt: Int64, validUntil: Int64?)
        -> Query
    {
        """
        INSERT INTO proj.users (user_id, version, document, rendered_at, valid_until, updated_at)
        VALUES (\(userId), \(version), \(document), \(renderedAt), \(validUntil), now())
        ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, document = excluded.document,
            rendered_at = excluded.rendered_at, valid_until = excluded.valid_until, updated_at = now(),
            changed_tx = DEFAULT
        """
    }

    /// Several documents rendered at `renderedAt`, in bound arrays (keep each under a few MB).
    package static func upsert(
        ids: [String], versions: [Int64], documents: [String], validUntils: [Int64?], renderedAt: Int64,
        into table: Table = .live
    ) -> Query {
        """
        INSERT INTO \(unescaped: table.name) (user_id, version, document, rendered_at, valid_until, updated_at)
        SELECT u, v, d, \(renderedAt)::bigint, vu, now()
        FROM unnest(\(array: ids)::text[], \(array: versions)::bigint[], \(array: documents)::text[],
            \(array: validUntils)::bigint[]) AS x(u, v, d, vu)
        ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, document = excluded.document,
            rendered_at = excluded.rendered_at, valid_until = excluded.valid_until, updated_at = now(),
            changed_tx = DEFAULT
        """
    }

    /// The stored document of `userId` when it is still true at `now`.
    package static func cached(userId: String, now: Int64) -> Query {
        """
        SELECT document, rendered_at, valid_until FROM proj.users
        WHERE user_id = \(userId) AND rendered_at <= \(now) AND (valid_until IS NULL OR valid_until > \(now))
        """
    }

    /// When the stored documents of `userIds` were rendered (user_id, rendered_at): the instant
    /// the change feed has announced each user's state up to. Read after the users' locks.
    package static func renderedAt(of userIds: [String]) -> Query {
        if userIds.count == 1 {
            return "SELECT user_id, rendered_at FROM proj.users WHERE user_id = \(userIds[0])"
        }
        return "SELECT user_id, rendered_at FROM proj.users WHERE user_id = ANY(\(array: userIds)::text[])"
    }

    package static func renderedAt(from rows: Rows) -> [String: Int64] {
        var result: [String: Int64] = [:]
        for row in 0..<rows.count {
            if let user = rows[row, 0], let at = rows[row, 1].flatMap({ Int64($0) }) { result[user] = at }
        }
        return result
    }

    /// Users whose stored document stops being true at or before `now` (the clock's work),
    /// earliest first.
    package static func due(now: Int64, limit: Int) -> Query {
        """
        SELECT user_id FROM proj.users WHERE valid_until <= \(now) ORDER BY valid_until LIMIT \(limit)
        """
    }

    /// Users whose live document was rendered after `since` or is due by `dueBy`, and users
    /// whose rebuilt one (in the successor table) is due by `dueBy`: what a replay's swap must
    /// judge again at the swap's instant (`ReplayEngine.Run.announceCorrections`).
    package static func movedByTime(since: Int64, dueBy: Int64) -> Query {
        """
        SELECT user_id FROM proj.users WHERE rendered_at > \(since) OR valid_until <= \(dueBy)
        UNION
        SELECT user_id FROM proj.users_next WHERE valid_until <= \(dueBy)
        """
    }

    /// One user's stored document's rendered_at and valid_until, read under the user's lock.
    package static func window(of userId: String) -> Query {
        "SELECT rendered_at, valid_until FROM proj.users WHERE user_id = \(userId)"
    }

    /// The live rows of `userIds` (user_id, version, rendered_at, document).
    package static func rows(of userIds: [String]) -> Query {
        "SELECT user_id, version, rendered_at, document FROM proj.users WHERE user_id = ANY(\(array: userIds)::text[])"
    }

    /// Every live row, as `rows(of:)` has them, in COPY text.
    package static let copyOut = "COPY (SELECT user_id, version, rendered_at, document FROM proj.users) TO STDOUT"

    /// The users whose row a transaction at or above `horizon` wrote (`changed_tx`, a superset of
    /// what changed since: see `UserDocumentCacheCheck`), then one row without a user: the next
    /// horizon, and the table's oid with the erasure epoch (a replay's swap makes a new table;
    /// an erasure deletes rows, which `changed_tx` cannot show: either drops everything).
    /// The upper bound changes no answer: it makes the condition a range between two parameters,
    /// which a generic plan estimates at 0.5 % of the table (an index scan), where `>=` alone is
    /// taken for a third of it: on a fresh database that plan was a sequential scan of every
    /// user, kept for each check until autovacuum analyzed the table (FreshDatabasePlanTests).
    package static func changes(since horizon: UInt64) -> Query {
        """
        SELECT user_id, changed_tx::text, NULL FROM proj.users
        WHERE changed_tx >= \(horizon)::xid8 AND changed_tx <= \(String(UInt64.max))::xid8
        UNION ALL
        SELECT NULL, pg_snapshot_xmin(pg_current_snapshot())::text, \(unescaped: relation)
        """
    }

    /// The first horizon and the table's oid and erasure epoch, as the last row of
    /// `changes(since:)` has them.
    package static let horizon: Query = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, \(unescaped: relation)"

    private static let relation: StaticString = """
        to_regclass('proj.users')::oid::text || ':' || (SELECT epoch FROM identity.erasure_epoch)::text
        """

    // MARK: A replay's successor table

    /// Drops a leftover successor and creates an empty one (indexes come after the load).
    package static let createNext = """
        DROP TABLE IF EXISTS proj.users_next;
        CREATE TABLE proj.users_next (LIKE proj.users INCLUDING DEFAULTS INCLUDING COMPRESSION);
        """

    /// The COPY that loads rows written by `appendCopyRow`.
    package static let copyIntoNext =
        "COPY proj.users_next (user_id, version, document, rendered_at, valid_until) FROM STDIN"

    /// One row of `copyIntoNext`.
    package static func appendCopyRow(
        userId: String, version: Int64, document: [UInt8], renderedAt: Int64, validUntil: Int64?,
        into out: inout [UInt8]
    ) {
        CopyText.escape(userId, into: &out)
        out.append(0x09)
        out.append(contentsOf: String(version).utf8)
        out.append(0x09)
        CopyText.escape(bytes: document, into: &out)
        out.append(0x09)
        out.append(contentsOf: String(renderedAt).utf8)
        out.append(0x09)
        if let validUntil {
            out.append(contentsOf: String(validUntil).utf8)
        } else {
            out.append(contentsOf: "\\N".utf8)
        }
        out.append(0x0A)
    }

    /// Indexes after the load (faster than maintaining them row by row), named as `swapNext`
    /// renames them: the key, the other two (each a CREATE INDEX: its share lock lets both
    /// parts build at once, on two connections), then the statistics. `ADD PRIMARY KEY` would
    /// build under an exclusive lock, so the key is a unique index first.
    package static let indexNextKey = """
        CREATE UNIQUE INDEX users_next_pkey ON proj.users_next (user_id);
        ALTER TABLE proj.users_next ADD CONSTRAINT users_next_pkey PRIMARY KEY USING INDEX users_next_pkey;
        """
    package static let indexNextOthers = """
        CREATE INDEX users_next_changed_tx_idx ON proj.users_next (changed_tx);
        CREATE INDEX users_next_valid_until_idx ON proj.users_next (valid_until) WHERE valid_until IS NOT NULL;
        """
    /// Every column but the document: no query filters on it, and sampling its text was 60 % of
    /// the ANALYZE (autovacuum analyzes the whole table later).
    package static let analyzeNext =
        "ANALYZE proj.users_next (user_id, version, rendered_at, valid_until, updated_at, changed_tx);"
    package static let indexNext = [indexNextKey, indexNextOthers, analyzeNext].joined(separator: "\n")

    /// Replaces the live table by the successor (run under an ACCESS EXCLUSIVE lock on it).
    package static let swapNext = """
        DROP TABLE proj.users;
        ALTER TABLE proj.users_next RENAME TO users;
        ALTER TABLE proj.users RENAME CONSTRAINT users_next_pkey TO users_pkey;
        ALTER INDEX proj.users_next_changed_tx_idx RENAME TO users_changed_tx_idx;
        ALTER INDEX proj.users_next_valid_until_idx RENAME TO users_valid_until_idx;
        """
}
