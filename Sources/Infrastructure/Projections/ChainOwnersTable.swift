import EventStore
import JSON

/// The one owner of `proj.chain_owners`' SQL (who owns each transaction chain): the claims
/// ingest records, the reads of owners, and how a replay builds, loads and swaps in its
/// successor `proj.chain_owners_next`.
package enum ChainOwnersTable {
    /// The live table, or the one a replay is building.
    package enum Table {
        case live, next

        package var name: StaticString {
            switch self {
            case .live: "proj.chain_owners"
            case .next: "proj.chain_owners_next"
            }
        }
    }

    /// Records claims made now (`claimed_at` is the server's clock). One claim is a plain
    /// VALUES row, whose plan is cached; unnest over bound arrays is planned on every execution.
    package static func upsert(_ claimed: [(otid: String, user: String)]) -> Connection.Statement {
        if claimed.count == 1 {
            let query: Query = """
                INSERT INTO proj.chain_owners (original_transaction_id, user_id) VALUES (\(claimed[0].otid), \
                \(claimed[0].user)) ON CONFLICT (original_transaction_id) DO UPDATE SET user_id = excluded.user_id, \
                claimed_at = now()
                """
            return query.statement
        }
        let query: Query = """
            INSERT INTO proj.chain_owners (original_transaction_id, user_id)
            SELECT * FROM unnest(\(array: claimed.map(\.otid))::text[], \(array: claimed.map(\.user))::text[])
            ON CONFLICT (original_transaction_id) DO UPDATE SET user_id = excluded.user_id, claimed_at = now()
            """
        return query.statement
    }

    /// The owners of `chainIds` (nil for none); read the answer with `owners(from:)`. The
    /// condition binds up to 8 ids one by one (see `PostgresArray.membership`).
    package static func owners(of chainIds: [String]) -> Connection.Statement? {
        guard !chainIds.isEmpty else { return nil }
        let (condition, parameters) = PostgresArray.membership("original_transaction_id", chainIds, firstParameter: 1)
        return Connection.Statement(
            "SELECT original_transaction_id, user_id FROM proj.chain_owners WHERE \(condition)", parameters)
    }

    /// originalTransactionId → owner, from rows of `owners(of:)` or `ownerRows(of:)`.
    package static func owners(from rows: Rows) -> [String: String] {
        var owners: [String: String] = [:]
        for row in 0..<rows.count {
            if let otid = rows[row, 0], let user = rows[row, 1] { owners[otid] = user }
        }
        return owners
    }

    /// The same rows as `owners(of:)` for many chains at once (one array parameter).
    package static func ownerRows(of chainIds: [String]) -> Query {
        """
        SELECT original_transaction_id, user_id FROM proj.chain_owners
        WHERE original_transaction_id = ANY(\(array: chainIds)::text[])
        """
    }

    /// The owner of one chain (no row: unclaimed).
    package static func owner(of otid: String) -> Query {
        "SELECT user_id FROM proj.chain_owners WHERE original_transaction_id = \(otid)"
    }

    /// The chains `userId` owns, in order.
    package static func chains(of userId: String) -> Query {
        "SELECT original_transaction_id FROM proj.chain_owners WHERE user_id = \(userId) ORDER BY 1"
    }

    /// Every owner, as `owners(from:)` reads them, in COPY text.
    package static let copyOut = "COPY (SELECT original_transaction_id, user_id FROM proj.chain_owners) TO STDOUT"

    // MARK: A replay's successor table

    package static let createNext = """
        DROP TABLE IF EXISTS proj.chain_owners_next;
        CREATE TABLE proj.chain_owners_next (LIKE proj.chain_owners INCLUDING DEFAULTS);
        """

    /// The COPY that loads rows written by `appendCopyRow`.
    package static let copyIntoNext =
        "COPY proj.chain_owners_next (original_transaction_id, user_id, claimed_at) FROM STDIN"

    /// One row of `copyIntoNext`: the claim's own instant, not the replay's.
    package static func appendCopyRow(otid: String, userId: String, claimedAt: Int64, into out: inout [UInt8]) {
        CopyText.escape(otid, into: &out)
        out.append(0x09)
        CopyText.escape(userId, into: &out)
        out.append(0x09)
        out.append(contentsOf: RFC3339.format(claimedAt).utf8)
        out.append(0x0A)
    }

    /// Claims a catch-up folded, into the successor (with the claims' instants).
    package static func upsertNext(otids: [String], owners: [String], claimedAt: [Int64]) -> Query {
        """
        INSERT INTO proj.chain_owners_next (original_transaction_id, user_id, claimed_at)
        SELECT o, u, 'epoch'::timestamptz + c * interval '1 millisecond'
        FROM unnest(\(array: otids)::text[], \(array: owners)::text[], \(array: claimedAt)::bigint[]) AS x(o, u, c)
        ON CONFLICT (original_transaction_id) DO UPDATE SET user_id = excluded.user_id, claimed_at = excluded.claimed_at
        """
    }

    /// Chains a catch-up found released, out of the successor.
    package static func deleteNext(_ otids: [String]) -> Query {
        "DELETE FROM proj.chain_owners_next WHERE original_transaction_id = ANY(\(array: otids)::text[])"
    }

    /// Keys and indexes of the loaded successor, named as `swapNext` renames them.
    package static let indexNext = """
        ALTER TABLE proj.chain_owners_next ADD CONSTRAINT chain_owners_next_pkey PRIMARY KEY (original_transaction_id);
        CREATE INDEX chain_owners_next_user_id_idx ON proj.chain_owners_next (user_id);
        ANALYZE proj.chain_owners_next;
        """

    /// Replaces the live table by the successor (run under an ACCESS EXCLUSIVE lock on it).
    package static let swapNext = """
        DROP TABLE proj.chain_owners;
        ALTER TABLE proj.chain_owners_next RENAME TO chain_owners;
        ALTER TABLE proj.chain_owners RENAME CONSTRAINT chain_owners_next_pkey TO chain_owners_pkey;
        ALTER INDEX proj.chain_owners_next_user_id_idx RENAME TO chain_owners_user_id_idx;
        """
}
