import EventStore
import Foundation
import Infrastructure
import JSON
import Ledger
import Synchronization

extension ReplayEngine {
    /// One replay's working state.
    package struct Run {
        package let engine: ReplayEngine
        package let connection: Connection
        package let options: ReplayOptions
        package let progress: (@Sendable (ReplayProgress) -> Void)?
        package let catalog: Catalog
        /// The recorded version `catalog` is; nil when the caller chose another catalog.
        package let catalogVersion: Int64?
        package let now: Int64
        package let started = Date()
        package var state = ReplayState()
        package var position = Checkpoint.start
        package var estimatedTotal = 0
        package var live: [String: LiveRow] = [:]
        package var liveOwners: [String: String] = [:]
        package var changed: [String: ReplayReport.ChangedUser] = [:]
        package var inFlight: Set<String> = []
        package var changedOwners: Set<String> = []
        /// The replay lease, whose fencing check (LeaseTable.require) is the swap's first
        /// statement: a run whose process stalled past its lease must not swap over its successor's.
        package let lease: Lease?
        package let fence: Query?
        /// What the swap wrote to the change feed (counted once it committed): the changes it
        /// built under its locks, and how many staged corrections it moved into the feed.
        package var corrections: [NewChange] = []
        package var stagedWritten = 0
        /// The users whose corrections `prepareCorrections` built, and their staging rows.
        package var staged: Set<String> = []
        package var stagedRows: [UInt8] = []
        /// The users' indexes other than the key, built on the second connection (`buildIndexes`).
        package var otherIndexes: Background<Void>?
        /// The second connection, and the live tables read on it (started by `readToEnd`).
        package var side: Connection?
        package var liveRead: Background<ReplayLive>?
        /// The subjects sealed user events are opened with.
        package var subjects: ReplaySubjects
        package var report: ReplayReport
        package var phaseStart = Date()
        package var decodeSeconds = 0.0
        package var foldSeconds = 0.0
        package var waitSeconds = 0.0

        package typealias LiveRow = ReplayLive.Row

        package init(
            engine: ReplayEngine, connection: Connection, options: ReplayOptions,
            progress: (@Sendable (ReplayProgress) -> Void)?, lease: Lease? = nil
        ) {
            self.lease = lease
            self.fence = lease?.fence
            self.engine = engine
            self.connection = connection
            self.options = options
            self.progress = progress
            let recorded = options.catalog == nil ? engine.catalogSource?() : nil
            self.catalog = options.catalog ?? recorded?.catalog ?? engine.catalog
            self.catalogVersion = recorded?.version
            self.now = options.now ?? engine.clock()
            self.report = ReplayReport(dryRun: options.dryRun, projections: [ProjectionVersions.users.name])
            let (conninfo, session) = (engine.conninfo, engine.session)
            self.subjects = ReplaySubjects { () throws(ServiceError) in
                try ReplayLive.connect(conninfo: conninfo, session: session)
            }
        }

        package mutating func execute() throws(ServiceError) -> ReplayReport {
            estimatedTotal = Int(try scalar("SELECT coalesce(max(seq), 0) FROM es.events") ?? 0)
            try subjects.loadAll(on: connection)
            // 1. Fold the whole log (below the xid horizon) in large batches.
            do {
                try readToEnd(phase: "read", readingLive: true)
            } catch {
                _ = try? liveRead?.wait()
                throw error
            }
            phase("readFold")
            report.phases.append(("read.decode", Int64(decodeSeconds * 1000)))
            report.phases.append(("read.fold", Int64(foldSeconds * 1000)))
            report.phases.append(("read.waitForServer", Int64(waitSeconds * 1000)))
            // 2. Render every document at one `now`, judge it against the live one (read meanwhile
            //    on a second connection) and load the next tables (COPY, indexes after).
            try renderAndLoad()
            phase(options.dryRun ? "render" : "renderLoad")
            if !options.dryRun {
                try buildIndexes()
                phase("index")
            }
            // 4. Catch up with what was appended meanwhile.
            options.beforeCatchUp?()
            let before = state.events
            state.tracking = true
            // A dry run never swaps, so it never reaches the final read under the writers' locks:
            // it reads every committed event here instead. Otherwise a long transaction anywhere in
            // the cluster (the xid horizon is cluster-wide) would hide recent events and every user
            // they touched would be reported as changed.
            try readToEnd(phase: "catch-up", horizon: !options.dryRun)
            try applyTouched()
            report.catchUpEvents = state.events - before
            phase("catchUp")
            // 5. Swap (under the writers' locks, folding the final delta first), with the
            //    corrections built before them.
            if !options.dryRun {
                try prepareCorrections()
                phase("corrections")
                options.beforeSwap?()
                try swap()
                report.swapped = true
                phase("swap")
            }
            report.events = state.events
            report.users = state.accounts.count
            report.changedUsers = changed.values.sorted { $0.userId < $1.userId }
            report.changedChainOwners = changedOwners.count
            report.inFlightUsers = inFlight.count
            report.position = position
            report.durationMs = Int64(Date().timeIntervalSince(started) * 1000)
            engine.metrics?.replayEvents.set(Double(state.events))
            tick("done")
            return report
        }

        package mutating func phase(_ name: String) {
            let now = Date()
            report.phases.append((name, Int64(now.timeIntervalSince(phaseStart) * 1000)))
            phaseStart = now
        }

        package func tick(_ phase: String) {
            engine.metrics?.replayEvents.set(Double(state.events))
            progress?(
                ReplayProgress(
                    phase: phase, events: state.events, estimatedTotal: max(estimatedTotal, state.events),
                    elapsedSeconds: Date().timeIntervalSince(started)))
        }

        private func scalar(_ sql: String) throws(ServiceError) -> Int64? {
            try database { () throws(DatabaseError) in
                let rows = try connection.query(sql)
                return rows.isEmpty ? nil : rows[0, 0].flatMap { Int64($0) }
            }
        }

        // MARK: Live projection

        /// Re-reads the live rows of `users` and `chains` (after writers touched them).
        package mutating func reloadLive(users: Set<String>, chains: Set<String>) throws(ServiceError) {
            try database { () throws(DatabaseError) in
                if !users.isEmpty {
                    let rows = try connection.query(UserDocumentsTable.rows(of: Array(users)))
                    for user in users { live[user] = nil }
                    for row in 0..<rows.count {
                        live[rows[row, 0]!] = LiveRow(
                            version: Int64(rows[row, 1]!)!, renderedAt: Int64(rows[row, 2]!)!,
                            document: Array(rows[row, 3]!.utf8))
                    }
                }
                if !chains.isEmpty {
                    let rows = try connection.query(ChainOwnersTable.ownerRows(of: Array(chains)))
                    for otid in chains { liveOwners[otid] = nil }
                    liveOwners.merge(ChainOwnersTable.owners(from: rows)) { _, owner in owner }
                }
            }
        }

        /// Judges one user: the rebuilt document against the live one, both at the same
        /// instant (the live document's `rendered_at`), so only rule or data differences count.
        package mutating func judge(_ userId: String, rendered: [UInt8]?) {
            changed[userId] = nil
            inFlight.remove(userId)
            let liveRow = live[userId]
            guard let rendered else {
                if let liveRow {
                    changed[userId] = ReplayReport.ChangedUser(
                        userId: userId, fields: ["document"], before: ReplayReport.summary(liveRow.document), after: nil
                    )
                }
                return
            }
            // Past the listed ones only the count matters: skip the (JSON-parsing) summaries.
            let detailed = changed.count < ReplayReport.listLimit
            guard let liveRow else {
                changed[userId] = ReplayReport.ChangedUser(
                    userId: userId, fields: ["document"], before: nil,
                    after: detailed ? ReplayReport.summary(rendered) : nil)
                return
            }
            if liveRow.document == rendered { return }
            if state.isInFlight(userId, storedVersion: liveRow.version) {
                inFlight.insert(userId)  // the service wrote events after our last read
                return
            }
            var atThen = rendered
            if liveRow.renderedAt != now {
                atThen = state.render(userId, catalog: catalog, at: liveRow.renderedAt).document
                if atThen == liveRow.document { return }
            }
            changed[userId] =
                detailed
                ? ReplayReport.ChangedUser(
                    userId: userId, fields: ReplayReport.differingFields(liveRow.document, atThen),
                    before: ReplayReport.summary(liveRow.document), after: ReplayReport.summary(rendered))
                : ReplayReport.ChangedUser(userId: userId, fields: [], before: nil, after: nil)
        }

        package mutating func judgeOwner(_ otid: String) {
            if liveOwners[otid] != state.owners[otid] { changedOwners.insert(otid) } else { changedOwners.remove(otid) }
        }
    }
}
