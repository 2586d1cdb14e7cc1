import EventStore

extension IdempotencyKey {
    /// A notification's key in the log's inbox: it is recorded once, by its notificationUUID
    /// (ingest writes it; the test notification's status asks whether it was).
    package static func appleNotification(_ notificationUUID: String) -> IdempotencyKey {
        IdempotencyKey(source: "apple-notification", externalId: notificationUUID)
    }
}
