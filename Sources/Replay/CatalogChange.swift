import EventStore
import Foundation
import Infrastructure
import JSON
import Ledger

/// Which users' documents a catalog changes, and their documents under it: the whole log
/// folded in memory (the replay's reader and fold), every stored document judged against the
/// one the catalog renders at the same instant (the replay's comparison: only the rules
/// differ, not the clock). Used by `serve` (re-render exactly those users before serving) and by
/// `catalog diff` (list them; change nothing).
package struct CatalogChange {
    /// One re-rendered document, judged at `now`.
    package struct Row {
        package var userId: String
        package var version: Int64
        package var document: [UInt8]
        package var validUntil: Int64?
        /// The stored document it replaces (what the change feed had announced).
        package var previous: [UInt8]
    }

    package var changed: [ReplayReport.ChangedUser] = []
    package var rows: [Row] = []
    /// Users with a stored document, and events folded.
    package var users = 0
    package var events = 0
    /// Users written to after the fold read their events (a dry run's race): not judged.
    package var inFlight = 0

    /// - Parameter horizon: false only while every writer of `proj.users` is held back (the
    ///   recorder's lock): then every committed event counts. A dry run reads below the xid
    ///   horizon, then every event committed past it (as the replay's dry run does: a long
    ///   transaction anywhere in the cluster holds the horizon back, and the users it hid would
    ///   be left out), and skips the users written meanwhile.
    package static func plan(
        catalog: Catalog, now: Int64, horizon: Bool, on connection: Connection
    ) throws(ServiceError) -> CatalogChange {
        var state = ReplayState()
        let reader = ReplayLogReader(connection: connection)
        // One connection, no prefetch: the lookups of subjects run on it between batches.
        let lookupConnection = connection
        var subjects = ReplaySubjects { () throws(ServiceError) in lookupConnection }
        try subjects.loadAll(on: connection)
        var position = Checkpoint.start
        for belowHorizon in horizon ? [true, false] : [false] {
            while true {
                let batch = try reader.read(after: position, horizon: belowHorizon, subjects: &subjects)
                guard let last = batch.last else { break }
                state.apply(batch.parts)
                position = last
            }
        }
        let live = try ReplayLive.load(on: connection)
        var change = CatalogChange(users: live.users.count, events: state.events)
        for userId in live.users.keys.sorted() {
            let stored = live.users[userId]!
            guard state.accounts[userId] != nil else { continue }
            if state.isInFlight(userId, storedVersion: stored.version) {
                change.inFlight += 1
                continue
            }
            let atThen = state.render(userId, catalog: catalog, at: stored.renderedAt).document
            if atThen == stored.document { continue }
            let (document, validUntil, version) = state.render(userId, catalog: catalog, at: now)
            change.rows.append(
                Row(
                    userId: userId, version: version, document: document, validUntil: validUntil,
                    previous: stored.document))
            change.changed.append(
                ReplayReport.ChangedUser(
                    userId: userId, fields: ReplayReport.differingFields(stored.document, atThen),
                    before: change.changed.count < ReplayReport.listLimit ? ReplayReport.summary(stored.document) : nil,
                    after: change.changed.count < ReplayReport.listLimit ? ReplayReport.summary(document) : nil))
        }
        return change
    }

    /// A CORRECTION per re-rendered user (api.md §4: the document changed with no new fact).
    package func corrections(now: Int64) -> [NewChange] {
        rows.map { NewChange.correction(userId: $0.userId, before: $0.previous, after: $0.document, at: now) }
    }

    /// The upserts that store `rows` (in chunks: bound arrays of a few MB each).
    package func upserts(now: Int64) -> [Connection.Statement] {
        stride(from: 0, to: rows.count, by: 5_000).map { start in
            let chunk = rows[start..<min(rows.count, start + 5_000)]
            return UserDocumentsTable.upsert(
                ids: chunk.map(\.userId), versions: chunk.map(\.version),
                documents: chunk.map { String(decoding: $0.document, as: UTF8.self) },
                validUntils: chunk.map(\.validUntil), renderedAt: now
            ).statement
        }
    }
}
