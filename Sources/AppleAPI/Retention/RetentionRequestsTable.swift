import EventStore
import Infrastructure
import Ledger

/// The one owner of `apple.retention_requests`' SQL (migration 0046): the index of Apple's
/// Retention Messaging requests, written in the transaction that appends each
/// `RetentionRequestAnswered` event; `analytics.retention_requests` is the analysts' view of it.
package enum RetentionRequestsTable {
    /// Whether Apple already asked with this requestIdentifier (a retry: answered, not recorded twice).
    package static func exists(_ requestIdentifier: String) -> Query {
        "SELECT 1 FROM apple.retention_requests WHERE request_identifier = \(requestIdentifier)"
    }

    package static func insert(_ answer: RetentionAnswer, seq: Int64) -> Query {
        """
        INSERT INTO apple.retention_requests
            (request_identifier, original_transaction_id, product_id, user_locale, environment, bundle_id,
             requested_at, tenure_months, rule_index, answer_kind, message_identifier, answer_product_id,
             offer_identifier, answered_at, seq)
        VALUES (\(answer.requestIdentifier), \(answer.originalTransactionId), \(answer.productId), \(answer.userLocale),
                \(answer.environment), \(answer.bundleId), \(answer.signedDate), \(answer.tenureMonths),
                \(answer.ruleIndex), \(answer.answer.rawValue), \(answer.messageIdentifier), \(answer.alternateProductId),
                \(answer.offerIdentifier), \(answer.at), \(seq))
        ON CONFLICT (request_identifier) DO NOTHING
        """
    }
}
