import EventStore
import Ledger

/// A replay's corrections, staged before its swap takes the writers' locks: a temporary table
/// of the swap's own transaction (dropped at its end, so it works through PgBouncer's
/// transaction pooling too), loaded by COPY while readers and writers still run, and moved
/// into `changes.feed` under the locks by one INSERT … SELECT. The feed's rows are the same as
/// `insert` would write (sealed: ChangeSealing); only where the work happens changes. `owner`
/// is the user id (the staged `user_id` is a subject), so the swap can leave out users it
/// judges again; the table is dropped with the transaction.
extension ChangeFeedTable {
    package static let createStaging = """
        CREATE TEMPORARY TABLE replay_corrections (
            n bigint NOT NULL, owner text, type text NOT NULL, user_id text, environment text, occurred_at bigint NOT NULL,
            product_id text, original_transaction_id text, transaction_id text, entitlement_ids text[] NOT NULL,
            details text NOT NULL, customer text NOT NULL
        ) ON COMMIT DROP
        """

    package static let copyIntoStaging = """
        COPY pg_temp.replay_corrections (n, owner, type, user_id, environment, occurred_at, product_id,
            original_transaction_id, transaction_id, entitlement_ids, details, customer) FROM STDIN
        """

    /// One row of `copyIntoStaging`; `n` orders the rows (their seqs follow it).
    package static func appendStagingRow(_ row: FeedRow, owner: String?, n: Int, into out: inout [UInt8]) {
        func field(_ text: String?) {
            if let text { CopyText.escape(text, into: &out) } else { out.append(contentsOf: "\\N".utf8) }
            out.append(0x09)
        }
        let draft = row.draft
        field(String(n))
        field(owner)
        field(draft.type.rawValue)
        field(row.userId)
        field(draft.environment)
        field(String(draft.occurredAt))
        field(draft.productId)
        field(draft.originalTransactionId)
        field(draft.transactionId)
        field(PostgresArray.literal(draft.entitlementIds))
        field(row.details)
        CopyText.escape(row.customer, into: &out)
        out.append(0x0A)
    }

    /// Moves the staged changes into the feed, in order, recorded at `recordedAt`, but for those
    /// of `users` (whose changes the caller judged again under the locks and writes itself).
    package static func insertStaged(except users: [String], recordedAt: Int64) -> Query {
        """
        INSERT INTO changes.feed (type, user_id, environment, occurred_at, recorded_at, product_id,
            original_transaction_id, transaction_id, entitlement_ids, details, customer)
        SELECT type, user_id, environment, occurred_at, \(recordedAt)::bigint, product_id,
            original_transaction_id, transaction_id, entitlement_ids, details, customer
        FROM pg_temp.replay_corrections
        WHERE owner IS NULL OR NOT (owner = ANY(\(array: users)::text[]))
        ORDER BY n
        """
    }
}
