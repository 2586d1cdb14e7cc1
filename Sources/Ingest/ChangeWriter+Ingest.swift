import EventStore
import Infrastructure
import Ledger

/// What a recording announces: the Ingest room's own use of the feed's writer.
extension ChangeWriter {
    /// The changes of a batch's projection writes (`documents`: what was rendered per user).
    package func changes(_ writes: IngestPlanner.ProjectionWrites, documents: [String: [UInt8]], now: Int64)
        -> [NewChange]
    {
        var changes: [NewChange] = []
        // App Store Connect's "Request a Test Notification": a TEST change for no user, so an
        // operator sees the whole path from Apple to their webhook receiver work.
        for case .notificationReceived(let fact) in writes.events where fact.type == .test {
            changes.append(
                NewChange(
                    userId: nil,
                    draft: ChangeDraft(
                        type: .test, environment: fact.environment, occurredAt: now,
                        details: ["notificationUUID": .string(fact.notificationUUID)]),
                    customer: "null"))
        }
        for (world, input) in zip(writes.users, writes.changeInputs) {
            guard let rendered = documents[world.userId] else { continue }
            changes += self.changes(input, after: world, events: writes.events, now: now, rendered: rendered)
        }
        return changes
    }
}
