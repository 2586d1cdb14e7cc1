import EventStore
import Infrastructure

/// The one owner of `reconcile.checkpoints`' SQL (migration 0028).
package enum ReconcileCheckpointsTable {
    /// (bundle_id, environment, reconciled_until, last_success_at, recorded_total) of every row.
    package static let all: Query =
        "SELECT bundle_id, environment, reconciled_until, last_success_at, recorded_total FROM reconcile.checkpoints"

    package struct Row: Sendable, Equatable {
        package var reconciledUntil: Int64
        package var lastSuccessAt: Int64
        package var recordedTotal: Int64
    }

    package static func decode(_ rows: Rows) -> [String: Row] {
        var result: [String: Row] = [:]
        for row in 0..<rows.count {
            guard let bundleId = rows[row, 0], let environment = rows[row, 1],
                let until = rows[row, 2].flatMap({ Int64($0) }), let success = rows[row, 3].flatMap({ Int64($0) }),
                let recorded = rows[row, 4].flatMap({ Int64($0) })
            else { continue }
            result[key(bundleId, environment)] = Row(
                reconciledUntil: until, lastSuccessAt: success, recordedTotal: recorded)
        }
        return result
    }

    package static func key(_ bundleId: String, _ environment: String) -> String { bundleId + "\u{1F}" + environment }

    /// A run that succeeded: it read up to `until` and recorded `recorded` notifications.
    package static func advance(bundleId: String, environment: String, until: Int64, now: Int64, recorded: Int) -> Query
    {
        """
        INSERT INTO reconcile.checkpoints (bundle_id, environment, reconciled_until, last_success_at, recorded_total)
        VALUES (\(bundleId), \(environment), \(until), \(now), \(recorded))
        ON CONFLICT (bundle_id, environment) DO UPDATE SET
            reconciled_until = GREATEST(reconcile.checkpoints.reconciled_until, excluded.reconciled_until),
            last_success_at = excluded.last_success_at,
            recorded_total = reconcile.checkpoints.recorded_total + excluded.recorded_total
        """
    }
}
