import EventStore

/// The one owner of `proj.user_aliases`' SQL (migration 0041): which user each alias id names
/// (api.md §7). Written with the AliasMerged event in the same transaction; read wherever a
/// call names a user (`LedgerService.resolveUser`); rebuilt from the log by a replay.
package enum UserAliasesTable {
    /// Records a merge: `mergedSeq` is the AliasMerged event's, and `merged_at` its exact
    /// `recorded_at` (what a replay's rebuild writes too).
    package static func insert(alias: String, userId: String, mergedSeq: Int64) -> Query {
        """
        INSERT INTO proj.user_aliases (alias, user_id, merged_seq, merged_at)
        SELECT \(alias), \(userId), seq, recorded_at FROM es.events WHERE seq = \(mergedSeq)::bigint
        """
    }

    /// The user `alias` names (no row: it names itself). With `asOf` (ms), only a merge recorded
    /// by then counts: the same bound the log's reads of that instant use (`readStreams`).
    package static func target(of alias: String, asOf: Int64? = nil) -> Query {
        guard let asOf else { return "SELECT user_id FROM proj.user_aliases WHERE alias = \(alias)" }
        return """
            SELECT user_id FROM proj.user_aliases WHERE alias = \(alias)
                AND merged_at < 'epoch'::timestamptz + (\(asOf)::bigint + 1) * interval '1 millisecond'
            """
    }

    /// The aliases of a user, in merge order.
    package static func aliases(of userId: String) -> Query {
        "SELECT alias FROM proj.user_aliases WHERE user_id = \(userId) ORDER BY merged_seq"
    }

    /// The targets of those of `users` that are aliases (a write's check that it locked none).
    package static func targets(of users: [String]) -> Query {
        "SELECT alias, user_id FROM proj.user_aliases WHERE alias = ANY(\(array: users)::text[])"
    }

    /// alias → target, from rows of `targets(of:)`.
    package static func targets(from rows: Rows) -> [String: String] {
        var targets: [String: String] = [:]
        for row in 0..<rows.count {
            if let alias = rows[row, 0], let user = rows[row, 1] { targets[alias] = user }
        }
        return targets
    }

    /// The alias's chains are the target's (with the merge, before the documents are written).
    package static func moveChains(alias: String, to userId: String) -> Query {
        "UPDATE proj.chain_owners SET user_id = \(userId), claimed_at = now() WHERE user_id = \(alias)"
    }

    /// The alias's tokens are the target's (the merge's last write: proj.app_account_tokens is
    /// the last table a replay's swap locks).
    package static func moveTokens(alias: String, to userId: String) -> Query {
        "UPDATE proj.app_account_tokens SET user_id = \(userId) WHERE user_id = \(alias)"
    }

    /// A replay rebuilds the table from the log, in its swap transaction before the tables are
    /// locked (it reads the AliasMerged events through `events_alias_merged_idx`, migration 0053,
    /// but a log may hold many: writers must not wait for it). Merges may commit
    /// meanwhile, and write their own rows: so rows are added and corrected, never all deleted,
    /// and only a row whose AliasMerged event is not in the log is removed (each statement sees
    /// every merge committed before it began, its row and its event alike). The events name
    /// subjects (`identity.user_of` gives the ids back).
    package static let rebuild = """
        INSERT INTO proj.user_aliases AS a (alias, user_id, merged_seq, merged_at)
        SELECT identity.user_of(data->>'alias'), identity.user_of(data->>'userId'), seq, recorded_at
        FROM es.events WHERE type = 'AliasMerged'
        ON CONFLICT (alias) DO UPDATE SET user_id = excluded.user_id, merged_seq = excluded.merged_seq,
            merged_at = excluded.merged_at
        WHERE (a.user_id, a.merged_seq, a.merged_at) IS DISTINCT FROM (excluded.user_id, excluded.merged_seq, excluded.merged_at);
        DELETE FROM proj.user_aliases a
        WHERE NOT EXISTS (SELECT 1 FROM es.events e WHERE e.seq = a.merged_seq AND e.type = 'AliasMerged');
        """

    /// After the token index's rebuild (under the swap's locks): the tokens an alias had
    /// registered are its target's, as the merge made them.
    package static let pointTokensAtTargets = """
        UPDATE proj.app_account_tokens t SET user_id = a.user_id
        FROM proj.user_aliases a WHERE t.user_id = a.alias;
        """
}
