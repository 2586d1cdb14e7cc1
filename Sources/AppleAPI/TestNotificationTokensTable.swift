import EventStore
import Infrastructure

/// The one owner of `apple.test_notification_tokens`' SQL (migration 0035): which app and
/// environment asked Apple for each test notification token, so its status is asked there.
package enum TestNotificationTokensTable {
    package struct Row: Sendable, Equatable {
        package var bundleId: String
        package var environment: String
    }

    /// A token Apple handed out. Apple's tokens are unique; asked twice, the first row stays.
    package static func remember(token: String, bundleId: String, environment: String, now: Int64) -> Query {
        """
        INSERT INTO apple.test_notification_tokens (token, bundle_id, environment, requested_at)
        VALUES (\(token), \(bundleId), \(environment), \(now))
        ON CONFLICT (token) DO NOTHING
        """
    }

    package static func lookup(_ token: String) -> Query {
        "SELECT bundle_id, environment FROM apple.test_notification_tokens WHERE token = \(token)"
    }

    package static func decode(_ rows: Rows) -> Row? {
        guard rows.count > 0, let bundleId = rows[0, 0], let environment = rows[0, 1] else { return nil }
        return Row(bundleId: bundleId, environment: environment)
    }
}
