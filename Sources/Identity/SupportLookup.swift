import EventStore
import Infrastructure
import JSON
import Ledger

/// `GET /v1/lookup` (api.md §7): which user and chain an id a customer or support holds names.
/// The one owner of the lookups' SQL. Each read is indexed and reads the log or tables written
/// in the log's own transaction, never a projection that follows later, so a lookup finds what
/// was recorded a moment ago, on the primary or on a caught-up read replica alike:
/// - transactionId: es.events by `events_transaction_id_idx` (0042);
/// - originalTransactionId: the chain's stream row (es.streams' primary key);
/// - appAccountToken: proj.app_account_tokens (0040) and es.events by `events_app_account_token_idx`;
/// - a chain's owner: proj.chain_owners (no row: unclaimed).
package enum SupportLookup {
    /// The id the caller named (exactly one of api.md's four parameters).
    package enum Key: Equatable {
        case transactionId(String)
        case originalTransactionId(String)
        /// Lowercased.
        case appAccountToken(String)
        case orderId(String)
    }

    /// One answer: `userId` nil is an unclaimed chain (or a token nobody registered), and
    /// `originalTransactionId` nil a registered token no recorded transaction carries yet.
    package struct Match: Equatable {
        package var userId: String?
        package var originalTransactionId: String?
        package var transactionId: String?

        package init(userId: String? = nil, originalTransactionId: String? = nil, transactionId: String? = nil) {
            self.userId = userId
            self.originalTransactionId = originalTransactionId
            self.transactionId = transactionId
        }
    }

    /// The chain of a recorded transaction. Any of its recorded versions names the same chain,
    /// so no order is asked: `ORDER BY seq DESC LIMIT 1` made PostgreSQL walk the log backwards
    /// by its primary key instead (136 ms over 400,000 events for an id not there, against
    /// 0.04 ms by the index).
    package static func chain(ofTransaction transactionId: String) -> Query {
        """
        SELECT data->>'originalTransactionId' FROM es.events
        WHERE type = 'TransactionRecorded' AND data->>'transactionId' = \(transactionId)
        LIMIT 1
        """
    }

    /// Whether a chain has been recorded (one row) or not (none).
    package static func chainExists(_ originalTransactionId: String) -> Query {
        "SELECT 1 FROM es.streams WHERE stream_id = \(LedgerStream.chain(originalTransactionId))"
    }

    /// The chain of the latest recorded transaction carrying `token` (lowercased): stored by its
    /// token subject (migration 0049), or in clear before. `OFFSET 0`
    /// keeps the inner scan on the token index: with the ORDER BY and LIMIT pulled up to it,
    /// PostgreSQL walks the log backwards by seq instead (see `chain(ofTransaction:)`).
    package static func chain(carrying token: String) -> Query {
        """
        SELECT chain FROM (
            SELECT seq, data->>'originalTransactionId' AS chain FROM es.events
            WHERE type = 'TransactionRecorded' AND data ? 'appAccountToken'
              AND lower(data->>'appAccountToken') = ANY(ARRAY[\(token),
                  (SELECT lower(subject) FROM identity.tokens WHERE token = \(token))])
            OFFSET 0
        ) AS carrying
        ORDER BY seq DESC LIMIT 1
        """
    }

    /// The answer's JSON: `userId` and `originalTransactionId` always (null when none),
    /// `transactionId` when one was named, then what `extra` adds.
    package static func json(_ match: Match, extra: (inout JSONWriter) -> Void = { _ in }) -> [UInt8] {
        var writer = JSONWriter(capacity: 160)
        writer.beginObject()
        writer.key("userId")
        if let user = match.userId { writer.string(user) } else { writer.null() }
        writer.key("originalTransactionId")
        if let chain = match.originalTransactionId { writer.string(chain) } else { writer.null() }
        if let transactionId = match.transactionId {
            writer.key("transactionId")
            writer.string(transactionId)
        }
        extra(&writer)
        writer.endObject()
        return writer.bytes
    }
}
