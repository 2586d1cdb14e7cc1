import EventStore
import JSON
import Ledger

/// What a replay's swap tells the change feed (api.md §4): one CORRECTION per user whose
/// document the rebuild changed, with the entitlements and balances before (as last announced)
/// and after; and, for users whose documents time changed while the replay ran, what time
/// changed, so the swap neither loses nor repeats a time-driven change.
extension ReplayEngine.Run {
    /// Runs under the swap's table locks, after the final catch-up: nothing writes the live
    /// tables meanwhile. Writes the changes and re-renders the users time moved at `swapNow`.
    mutating func announceCorrections() throws(ServiceError) {
        let swapNow = max(now, engine.clock())
        // Users whose live document was rendered after the replay's `now` (a write, the clock) or
        // is due, and users whose rebuilt one is due: judged again at `swapNow`, so the next
        // table's rendered_at never goes back behind what the feed already announced.
        let rows = try database { () throws(DatabaseError) -> Rows in
            try connection.query(UserDocumentsTable.movedByTime(since: now, dueBy: swapNow))
        }
        let moved = Set((0..<rows.count).compactMap { rows[$0, 0] })
        try reloadLive(users: moved, chains: [])
        var changes: [NewChange] = []
        var ids: [String] = [], versions: [Int64] = [], documents: [String] = [], validUntils: [Int64?] = []
        for userId in moved.sorted() {
            let (document, validUntil, version) = state.render(userId, catalog: catalog, at: swapNow)
            ids.append(userId)
            versions.append(version)
            documents.append(String(decoding: document, as: UTF8.self))
            validUntils.append(validUntil)
            if changed[userId] != nil {
                changes.append(correction(userId, after: document, at: swapNow))
            } else if let liveRow = live[userId], liveRow.renderedAt < swapNow {
                let facts = ChangeDetector.Facts(
                    account: state.world.account(of: userId), chains: state.world.chains, version: version)
                let steps = ChangeDetector.elapsed(
                    userId: userId, facts: facts, catalog: catalog, from: liveRow.renderedAt, to: swapNow)
                changes += NewChange.from(steps, userId: userId)
            }
        }
        for userId in changed.keys.sorted() where !moved.contains(userId) {
            changes.append(correction(userId, after: state.render(userId, catalog: catalog, at: now).document, at: now))
        }
        try database { () throws(DatabaseError) in
            if !ids.isEmpty {
                try connection.execute(
                    UserDocumentsTable.upsert(
                        ids: ids, versions: versions, documents: documents, validUntils: validUntils,
                        renderedAt: swapNow, into: .next))
            }
            for insert in NewChange.inserts(changes, recordedAt: swapNow) { try connection.execute(insert) }
        }
        corrections = changes
    }

    /// A CORRECTION for `userId`, before as the live document (what was announced) had it.
    func correction(_ userId: String, after: [UInt8], at instant: Int64) -> NewChange {
        NewChange.correction(userId: userId, before: live[userId]?.document, after: after, at: instant)
    }
}
