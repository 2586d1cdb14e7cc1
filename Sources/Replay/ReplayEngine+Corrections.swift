import EventStore
import Infrastructure
import JSON
import Ledger

/// What a replay's swap tells the change feed (api.md §4): one CORRECTION per user whose
/// document the rebuild changed, with the entitlements and balances before (as last announced)
/// and after; and, for users whose documents time changed while the replay ran, what time
/// changed, so the swap neither loses nor repeats a time-driven change.
extension ReplayEngine.Run {
    /// Before the swap's transaction: the CORRECTION of every changed user as the replay stands
    /// now, as COPY rows for `stageCorrections`, built on several threads. Rendering and writing
    /// them took ~35 µs a user under the writers' locks (3.5 s for a first replay's 100k users);
    /// the locks now cover only moving them into the feed and the users judged again there.
    ///
    /// Sealed (ChangeSealing) with the subjects the replay read: every user it folded, so every
    /// user a correction names; a changed user missing there (none expected) is looked up.
    package mutating func prepareCorrections() throws(ServiceError) {
        let users = changed.keys.sorted()
        staged = Set(users)
        let subjects = try feedSubjects(users)
        stagedRows = try Self.correctionRows(
            users, state: state, catalog: catalog, at: now, against: live, subjects: subjects)
    }

    /// The replay's subjects, with those of `users` it lacks read on the main connection.
    package func feedSubjects(_ users: some Collection<String>) throws(ServiceError) -> Subjects {
        var known = subjects.subjects
        let missing = users.filter { known.byUser[$0] == nil }
        guard !missing.isEmpty else { return known }
        let query = SubjectsTable.existing(users: Array(missing))
        known.merge(
            SubjectsTable.subjects(
                from: try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) }))
        return known
    }

    /// In the swap's transaction, before its locks: loads the prepared rows into its temporary
    /// table (ChangeFeedTable+Staging).
    package mutating func stageCorrections() throws(ServiceError) {
        guard !staged.isEmpty else { return }
        let rows = stagedRows
        stagedRows = []
        try database { () throws(DatabaseError) in
            try connection.executeScript(ChangeFeedTable.createStaging)
            try connection.copyIn(ChangeFeedTable.copyIntoStaging, data: rows)
        }
    }

    /// Runs under the swap's table locks, after the final catch-up: nothing writes the live
    /// tables meanwhile. Writes the changes and re-renders the users time moved at `swapNow`.
    /// `rejudged` are the users that catch-up judged again (after `prepareCorrections`): their
    /// staged corrections are dropped and written anew here, like those of the users time moved.
    package mutating func announceCorrections(rejudged: Set<String>) throws(ServiceError) {
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
        var ids: [String] = []
        var versions: [Int64] = []
        var documents: [String] = []
        var validUntils: [Int64?] = []
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
        let fresh = moved.union(rejudged)
        for userId in changed.keys.sorted()
        where !moved.contains(userId) && (rejudged.contains(userId) || !staged.contains(userId)) {
            changes.append(correction(userId, after: state.render(userId, catalog: catalog, at: now).document, at: now))
        }
        let restaged = Array(staged.intersection(fresh))
        try database { () throws(DatabaseError) in
            if !ids.isEmpty {
                try connection.execute(
                    UserDocumentsTable.upsert(
                        ids: ids, versions: versions, documents: documents, validUntils: validUntils,
                        renderedAt: swapNow, into: .next))
            }
            if !staged.isEmpty {
                try connection.execute(ChangeFeedTable.insertStaged(except: restaged, recordedAt: swapNow))
            }
        }
        let feedSubjects = try feedSubjects(ChangeSealing.users(named: changes))
        for insert in try NewChange.inserts(changes, subjects: feedSubjects, recordedAt: swapNow) {
            _ = try database { () throws(DatabaseError) in try connection.execute(insert) }
        }
        stagedWritten = staged.count - restaged.count
        corrections = changes
    }

    /// The staging rows of `users`' corrections, in order, rendered on `parallelism` threads
    /// (the state is only read).
    package static func correctionRows(
        _ users: [String], state: ReplayState, catalog: Catalog, at now: Int64, against live: [String: LiveRow],
        subjects: Subjects
    ) throws(ServiceError) -> [UInt8] {
        let parts = ReplayEngine.inParts(users.count) { range -> Result<[UInt8], ServiceError> in
            var out: [UInt8] = []
            for index in range {
                let userId = users[index]
                let change = NewChange.correction(
                    userId: userId, before: live[userId]?.document,
                    after: state.render(userId, catalog: catalog, at: now).document, at: now)
                do throws(ServiceError) {
                    let row = try ChangeSealing.row(change, subjects: subjects)
                    ChangeFeedTable.appendStagingRow(row, owner: userId, n: index, into: &out)
                } catch {
                    return .failure(error)
                }
            }
            return .success(out)
        }
        var rows: [UInt8] = []
        for part in parts { rows += try part.get() }
        return rows
    }

    /// A CORRECTION for `userId`, before as the live document (what was announced) had it.
    package func correction(_ userId: String, after: [UInt8], at instant: Int64) -> NewChange {
        NewChange.correction(userId: userId, before: live[userId]?.document, after: after, at: instant)
    }
}
