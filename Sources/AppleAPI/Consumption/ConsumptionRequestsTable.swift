import EventStore
import Infrastructure
import Ledger

/// The one owner of `apple.consumption_requests`' SQL (migration 0029): Apple's
/// CONSUMPTION_REQUESTs still to answer, and how each ended.
package enum ConsumptionRequestsTable {
    /// Apple accepts an answer for 12 hours after it asked.
    package static let windowMillis: Int64 = 12 * 60 * 60 * 1000

    /// A request, as the responder plans with it.
    package struct Row: Sendable, Equatable {
        package var notificationUUID: String
        package var originalTransactionId: String
        package var transactionId: String
        package var environment: String?
        package var requestedAt: Int64
        package var deadline: Int64
        package var state: ConsumptionRequestState
        package var attempts: Int
        package var nextAttemptAt: Int64
        package var lastError: String?
    }

    /// Queues the CONSUMPTION_REQUESTs among `events` (the notifications a write records, so a
    /// redelivered one is not among them); nil when there is none. Sent in the recording
    /// transaction: a request acknowledged to Apple is never lost.
    package static func enqueue(_ events: [LedgerEvent], now: Int64) -> Query? {
        var uuids: [String] = []
        var otids: [String] = []
        var ids: [String] = []
        var environments: [String?] = []
        var requested: [Int64] = []
        for case .notificationReceived(let fact) in events where fact.type == .consumptionRequest {
            guard let otid = fact.originalTransactionId, let id = fact.transactionId else { continue }
            uuids.append(fact.notificationUUID)
            otids.append(otid)
            ids.append(id)
            environments.append(fact.environment)
            requested.append(fact.signedDate)
        }
        guard !uuids.isEmpty else { return nil }
        return """
            INSERT INTO apple.consumption_requests
                (notification_uuid, original_transaction_id, transaction_id, environment, requested_at, deadline,
                 next_attempt_at, updated_at)
            SELECT u, o, t, e, r, r + \(windowMillis), \(now), \(now)
            FROM unnest(\(array: uuids)::text[], \(array: otids)::text[], \(array: ids)::text[],
                        \(array: environments)::text[], \(array: requested)::bigint[]) AS q(u, o, t, e, r)
            ON CONFLICT (notification_uuid) DO NOTHING
            """
    }

    package static let columns: StaticString = """
        notification_uuid, original_transaction_id, transaction_id, environment, requested_at, deadline, state,
        attempts, next_attempt_at, last_error
        """

    /// Pending requests whose next attempt is due, soonest first.
    package static func due(now: Int64, limit: Int) -> Query {
        """
        SELECT \(unescaped: columns) FROM apple.consumption_requests
        WHERE state = 'pending' AND next_attempt_at <= \(now)
        ORDER BY next_attempt_at LIMIT \(limit)
        """
    }

    /// One request by its notification. Read under the chain's lock, which every settling of
    /// it takes first: a row lock here would be a write before the event's append, which
    /// `es.append` refuses (it must be the transaction's first write).
    package static func find(_ notificationUUID: String) -> Query {
        "SELECT \(unescaped: columns) FROM apple.consumption_requests WHERE notification_uuid = \(notificationUUID)"
    }

    /// Pending requests (the gauge).
    package static let pendingCount: Query = "SELECT count(*) FROM apple.consumption_requests WHERE state = 'pending'"

    /// Where an attempt (or a decision not to send) left the request.
    package static func settle(_ notificationUUID: String, _ settlement: ConsumptionSettlement, now: Int64) -> Query {
        """
        UPDATE apple.consumption_requests
        SET state = \(settlement.state.rawValue), attempts = \(settlement.attempts),
            next_attempt_at = \(settlement.nextAttemptAt), last_error = \(settlement.lastError), updated_at = \(now)
        WHERE notification_uuid = \(notificationUUID)
        """
    }

    package static func decode(_ rows: Rows) -> [Row] {
        (0..<rows.count).compactMap { row in
            guard let uuid = rows[row, 0], let otid = rows[row, 1], let id = rows[row, 2],
                let requested = rows[row, 4].flatMap({ Int64($0) }), let deadline = rows[row, 5].flatMap({ Int64($0) }),
                let state = rows[row, 6].flatMap(ConsumptionRequestState.init(rawValue:)),
                let attempts = rows[row, 7].flatMap({ Int($0) }), let next = rows[row, 8].flatMap({ Int64($0) })
            else { return nil }
            return Row(
                notificationUUID: uuid, originalTransactionId: otid, transactionId: id, environment: rows[row, 3],
                requestedAt: requested, deadline: deadline, state: state, attempts: attempts, nextAttemptAt: next,
                lastError: rows[row, 9])
        }
    }
}
