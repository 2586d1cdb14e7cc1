import EventStore
import Foundation
import JSON
import Ledger
import Synchronization

extension ReplayEngine {
    /// One replay's working state.
    struct Run {
        let engine: ReplayEngine
        let connection: Connection
        let options: ReplayOptions
        let progress: (@Sendable (ReplayProgress) -> Void)?
        let catalog: Catalog
        /// The recorded version `catalog` is; nil when the caller chose another catalog.
        let catalogVersion: Int64?
        let now: Int64
        let started = Date()
        var state = ReplayState()
        var position = Checkpoint.start
        var estimatedTotal = 0
        var live: [String: LiveRow] = [:]
        var liveOwners: [String: String] = [:]
        var changed: [String: ReplayReport.ChangedUser] = [:]
        var inFlight: Set<String> = []
        var changedOwners: Set<String> = []
        var report: ReplayReport
        var phaseStart = Date()
        var decodeSeconds = 0.0
        var foldSeconds = 0.0
        var waitSeconds = 0.0

        typealias LiveRow = ReplayLive.Row

        init(engine: ReplayEngine, connection: Connection, options: ReplayOptions,
             progress: (@Sendable (ReplayProgress) -> Void)?)
        {
            self.engine = engine
            self.connection = connection
            self.options = options
            self.progress = progress
            let recorded = options.catalog == nil ? engine.catalogSource?() : nil
            self.catalog = options.catalog ?? recorded?.catalog ?? engine.catalog
            self.catalogVersion = recorded?.version
            self.now = options.now ?? engine.clock()
            self.report = ReplayReport(dryRun: options.dryRun, projections: [ProjectionVersions.users.name])
        }

        mutating func execute() throws(ServiceError) -> ReplayReport {
            estimatedTotal = Int(try scalar("SELECT coalesce(max(seq), 0) FROM es.events") ?? 0)
            // 1. Fold the whole log (below the xid horizon) in large batches.
            try readToEnd(phase: "read")
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
            // 5. Swap (under the writers' locks, folding the final delta first).
            if !options.dryRun {
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

        private mutating func phase(_ name: String) {
            let now = Date()
            report.phases.append((name, Int64(now.timeIntervalSince(phaseStart) * 1000)))
            phaseStart = now
        }

        private func tick(_ phase: String) {
            engine.metrics?.replayEvents.set(Double(state.events))
            progress?(ReplayProgress(
                phase: phase, events: state.events, estimatedTotal: max(estimatedTotal, state.events),
                elapsedSeconds: Date().timeIntervalSince(started)))
        }

        /// Reads and folds every event after `position`. The next batch is fetched on a helper
        /// thread while the current one is decoded and folded, so the server's work (index
        /// scan, jsonb output) overlaps with ours.
        private mutating func readToEnd(phase: String, horizon: Bool = true) throws(ServiceError) {
            let reader = ReplayLogReader(connection: connection, batchSize: options.batchSize)
            tick(phase)
            var pending: [UInt8]? = try reader.fetch(after: position, horizon: horizon)
            // The buffer of the batch before, handed to the next fetch (two buffers in turn).
            var spare: [UInt8] = []
            while let bytes = pending {
                pending = nil
                let (rows, last) = ReplayLogReader.summary(bytes)
                guard let last else { break }
                var prefetch: Prefetch?
                if rows >= options.batchSize {
                    var handed: [UInt8] = []
                    Swift.swap(&handed, &spare)
                    prefetch = Prefetch(reader: reader, after: last, horizon: horizon, reusing: consume handed)
                }
                let decodeStart = Date()
                let batch: ReplayLogReader.Batch
                do {
                    batch = try ReplayLogReader.decodeInParallel(bytes, parts: ReplayEngine.parallelism)
                } catch {
                    _ = try? prefetch?.wait()
                    throw error
                }
                let foldStart = Date()
                state.apply(batch.events)
                position = last
                decodeSeconds += foldStart.timeIntervalSince(decodeStart)
                foldSeconds += Date().timeIntervalSince(foldStart)
                tick(phase)
                spare = bytes
                if let prefetch {
                    let waitStart = Date()
                    pending = try prefetch.wait()
                    waitSeconds += Date().timeIntervalSince(waitStart)
                }
            }
        }

        private func scalar(_ sql: String) throws(ServiceError) -> Int64? {
            try database { () throws(DatabaseError) in
                let rows = try connection.query(sql)
                return rows.isEmpty ? nil : rows[0, 0].flatMap { Int64($0) }
            }
        }

        // MARK: Live projection

        /// Re-reads the live rows of `users` and `chains` (after writers touched them).
        private mutating func reloadLive(users: Set<String>, chains: Set<String>) throws(ServiceError) {
            try database { () throws(DatabaseError) in
                if !users.isEmpty {
                    let rows = try connection.query(
                        "SELECT user_id, version, rendered_at, document FROM proj.users WHERE user_id = ANY($1::text[])",
                        [PostgresArray.literal(Array(users))])
                    for user in users { live[user] = nil }
                    for row in 0..<rows.count {
                        live[rows[row, 0]!] = LiveRow(
                            version: Int64(rows[row, 1]!)!, renderedAt: Int64(rows[row, 2]!)!,
                            document: Array(rows[row, 3]!.utf8))
                    }
                }
                if !chains.isEmpty {
                    let rows = try connection.query(
                        "SELECT original_transaction_id, user_id FROM proj.chain_owners WHERE original_transaction_id = ANY($1::text[])",
                        [PostgresArray.literal(Array(chains))])
                    for otid in chains { liveOwners[otid] = nil }
                    for row in 0..<rows.count { liveOwners[rows[row, 0]!] = rows[row, 1]! }
                }
            }
        }

        /// Judges one user: the rebuilt document against the live one, both at the same
        /// instant (the live document's `rendered_at`), so only rule or data differences count.
        private mutating func judge(_ userId: String, rendered: [UInt8]?) {
            changed[userId] = nil
            inFlight.remove(userId)
            let liveRow = live[userId]
            guard let rendered else {
                if let liveRow {
                    changed[userId] = ReplayReport.ChangedUser(
                        userId: userId, fields: ["document"], before: ReplayReport.summary(liveRow.document), after: nil)
                }
                return
            }
            // Past the listed ones only the count matters: skip the (JSON-parsing) summaries.
            let detailed = changed.count < ReplayReport.listLimit
            guard let liveRow else {
                changed[userId] = ReplayReport.ChangedUser(
                    userId: userId, fields: ["document"], before: nil, after: detailed ? ReplayReport.summary(rendered) : nil)
                return
            }
            if liveRow.document == rendered { return }
            if liveRow.version > state.version(of: userId) {
                inFlight.insert(userId)  // the service wrote events after our last read
                return
            }
            var atThen = rendered
            if liveRow.renderedAt != now {
                atThen = state.render(userId, catalog: catalog, at: liveRow.renderedAt).document
                if atThen == liveRow.document { return }
            }
            changed[userId] = detailed
                ? ReplayReport.ChangedUser(
                    userId: userId, fields: ReplayReport.differingFields(liveRow.document, atThen),
                    before: ReplayReport.summary(liveRow.document), after: ReplayReport.summary(rendered))
                : ReplayReport.ChangedUser(userId: userId, fields: [], before: nil, after: nil)
        }

        private mutating func judgeOwner(_ otid: String) {
            if liveOwners[otid] != state.owners[otid] { changedOwners.insert(otid) } else { changedOwners.remove(otid) }
        }

        // MARK: Render, load

        /// A second connection reads the live tables (after the fold's reads, as judging needs),
        /// then loads and indexes the next chain owners, while this one loads the users: they are
        /// rendered in chunks on several threads straight into COPY rows, each chunk loaded on a
        /// helper thread while the next renders. Only users whose document differs from the
        /// live one are judged (an equal one is unchanged by definition).
        private mutating func renderAndLoad() throws(ServiceError) {
            if !options.dryRun { try createNextTables() }
            let side = try ReplayLive.connect(conninfo: engine.conninfo)
            let reading = Background { () throws(ServiceError) in try ReplayLive.load(on: side) }
            var ownerRows: [UInt8] = []
            if !options.dryRun {
                ownerRows.reserveCapacity(state.owners.count * 48)
                for (otid, user) in state.owners {
                    CopyText.appendOwnerRow(otid: otid, userId: user, claimedAt: state.claimedAt[otid] ?? now, into: &ownerRows)
                }
            }
            let current = try reading.wait()
            live = current.users
            liveOwners = current.owners
            let owners: Background<Void>? = options.dryRun ? nil : Background { [ownerRows] () throws(ServiceError) in
                try database { () throws(DatabaseError) in
                    if !ownerRows.isEmpty {
                        try side.copyIn(
                            "COPY proj.chain_owners_next (original_transaction_id, user_id, claimed_at) FROM STDIN",
                            data: ownerRows)
                    }
                    try side.executeScript(
                        """
                        ALTER TABLE proj.chain_owners_next ADD CONSTRAINT chain_owners_next_pkey PRIMARY KEY (original_transaction_id);
                        CREATE INDEX chain_owners_next_user_id_idx ON proj.chain_owners_next (user_id);
                        ANALYZE proj.chain_owners_next;
                        """)
                }
            }
            var loading: Background<Void>?
            do {
                let users = Array(state.accounts.keys)
                let chunk = 4096 * ReplayEngine.parallelism
                var start = 0
                while start < users.count {
                    let end = min(users.count, start + chunk)
                    let rendered = Self.render(
                        users[start..<end], state: state, catalog: catalog, at: now, against: live, rows: !options.dryRun)
                    for (userId, document) in rendered.differing { judge(userId, rendered: document) }
                    if !options.dryRun {
                        try loading?.wait()
                        loading = copyInBackground(
                            "COPY proj.users_next (user_id, version, document, rendered_at, valid_until) FROM STDIN",
                            rendered.rows)
                    }
                    start = end
                    tick("render")
                }
                try loading?.wait()
                try owners?.wait()
            } catch {
                _ = try? loading?.wait()
                _ = try? owners?.wait()
                throw error
            }
            for userId in live.keys where state.accounts[userId] == nil { judge(userId, rendered: nil) }
            for (otid, owner) in liveOwners where state.owners[otid] != owner { changedOwners.insert(otid) }
            for otid in state.owners.keys where liveOwners[otid] == nil { changedOwners.insert(otid) }
        }

        private func copyInBackground(_ sql: String, _ rows: [UInt8]) -> Background<Void>? {
            guard !rows.isEmpty else { return nil }
            let connection = self.connection
            return Background { () throws(ServiceError) in
                try database { () throws(DatabaseError) in try connection.copyIn(sql, data: rows) }
            }
        }

        /// Renders `users` on `parallelism` threads (the state is only read): the `proj.users`
        /// COPY rows (when `rows`), and the documents that differ from `live`, in order.
        static func render(
            _ users: ArraySlice<String>, state: ReplayState, catalog: Catalog, at now: Int64,
            against live: [String: LiveRow], rows: Bool
        ) -> (rows: [UInt8], differing: [(String, [UInt8])]) {
            let parts = ReplayEngine.parallelism
            let base = users.startIndex
            let per = (users.count + parts - 1) / max(parts, 1)
            let results = Mutex<[Int: (rows: [UInt8], differing: [(String, [UInt8])])]>([:])
            DispatchQueue.concurrentPerform(iterations: parts) { part in
                var out: [UInt8] = []
                if rows { out.reserveCapacity(per * 768) }
                var differing: [(String, [UInt8])] = []
                for index in (base + min(users.count, part * per))..<(base + min(users.count, (part + 1) * per)) {
                    let userId = users[index]
                    let (document, validUntil, version) = state.render(userId, catalog: catalog, at: now)
                    if live[userId]?.document != document { differing.append((userId, document)) }
                    if rows {
                        CopyText.appendUserRow(
                            userId: userId, version: version, document: document, renderedAt: now,
                            validUntil: validUntil, into: &out)
                    }
                }
                results.withLock { $0[part] = (out, differing) }
            }
            var all = results.withLock { $0 }
            var result = all.removeValue(forKey: 0) ?? ([], [])
            for part in 1..<max(parts, 1) {
                guard let piece = all[part] else { continue }
                result.rows.append(contentsOf: piece.rows)
                result.differing.append(contentsOf: piece.differing)
            }
            return result
        }

        private func createNextTables() throws(ServiceError) {
            try database { () throws(DatabaseError) in
                try connection.executeScript(
                    """
                    DROP TABLE IF EXISTS proj.users_next;
                    DROP TABLE IF EXISTS proj.chain_owners_next;
                    CREATE TABLE proj.users_next (LIKE proj.users INCLUDING DEFAULTS);
                    CREATE TABLE proj.chain_owners_next (LIKE proj.chain_owners INCLUDING DEFAULTS);
                    """)
            }
        }

        /// Indexes after the load (faster than maintaining them row by row); the chain owners'
        /// were built on the second connection meanwhile.
        private func buildIndexes() throws(ServiceError) {
            tick("index")
            try database { () throws(DatabaseError) in
                try connection.executeScript(
                    """
                    ALTER TABLE proj.users_next ADD CONSTRAINT users_next_pkey PRIMARY KEY (user_id);
                    CREATE INDEX users_next_changed_tx_idx ON proj.users_next (changed_tx);
                    ANALYZE proj.users_next;
                    """)
            }
        }

        // MARK: Catch-up and swap

        /// Re-renders the users and owners the caught-up events touched, in the next tables
        /// (unless dry run), and judges them again against fresh live rows.
        private mutating func applyTouched() throws(ServiceError) {
            let users = state.touched
            var chains = state.touchedChains
            state.touched = []
            state.touchedChains = []
            guard !users.isEmpty || !chains.isEmpty else { return }
            chains.formUnion(users.flatMap { state.accounts[$0]?.chains ?? [] })
            try reloadLive(users: users, chains: chains)
            var ids: [String] = [], versions: [String?] = [], documents: [String] = [], validUntils: [String?] = []
            for userId in users {
                let (document, validUntil, version) = state.render(userId, catalog: catalog, at: now)
                judge(userId, rendered: document)
                ids.append(userId)
                versions.append(String(version))
                documents.append(String(decoding: document, as: UTF8.self))
                validUntils.append(validUntil.map(String.init))
            }
            for otid in chains { judgeOwner(otid) }
            guard !options.dryRun else { return }
            let owners = state.owners
            let claimedAt = state.claimedAt
            let released = chains.filter { owners[$0] == nil }
            let owned = chains.filter { owners[$0] != nil }
            let now = self.now
            try database { () throws(DatabaseError) in
                if !ids.isEmpty {
                    try connection.execute(
                        """
                        INSERT INTO proj.users_next (user_id, version, document, rendered_at, valid_until)
                        SELECT u, v, d, $4::bigint, w FROM unnest($1::text[], $2::bigint[], $3::text[], $5::bigint[]) AS x(u, v, d, w)
                        ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, document = excluded.document,
                            rendered_at = excluded.rendered_at, valid_until = excluded.valid_until, updated_at = now(),
                            changed_tx = DEFAULT
                        """,
                        [PostgresArray.literal(ids), PostgresArray.numbers(versions), PostgresArray.literal(documents),
                         String(now), PostgresArray.numbers(validUntils)])
                }
                if !released.isEmpty {
                    try connection.execute(
                        "DELETE FROM proj.chain_owners_next WHERE original_transaction_id = ANY($1::text[])",
                        [PostgresArray.literal(Array(released))])
                }
                if !owned.isEmpty {
                    let list = Array(owned)
                    try connection.execute(
                        """
                        INSERT INTO proj.chain_owners_next (original_transaction_id, user_id, claimed_at)
                        SELECT o, u, 'epoch'::timestamptz + c * interval '1 millisecond'
                        FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x(o, u, c)
                        ON CONFLICT (original_transaction_id) DO UPDATE SET user_id = excluded.user_id, claimed_at = excluded.claimed_at
                        """,
                        [PostgresArray.literal(list), PostgresArray.literal(list.map { owners[$0]! }),
                         PostgresArray.numbers(list.map { String(claimedAt[$0] ?? now) })])
                }
            }
        }

        private mutating func swap() throws(ServiceError) {
            var failure: ServiceError?
            do {
                try connection.transaction { _ in
                    // Before the table locks (a recorder holds the catalog lock and then writes
                    // proj.users): swap only documents of the catalog still in force.
                    if let catalogVersion {
                        do {
                            _ = try connection.query(CatalogVersions.requireStatement(catalogVersion).sql,
                                                     CatalogVersions.requireStatement(catalogVersion).params)
                        } catch let error as DatabaseError where error.sqlState == CatalogVersions.staleVersionState {
                            failure = .busy("a new catalog version was recorded while the replay ran; run it again")
                            throw error
                        }
                    }
                    try connection.executeScript(
                        """
                        SET LOCAL lock_timeout = '30s';
                        SET LOCAL synchronous_commit = on;
                        LOCK TABLE proj.chain_owners, proj.users IN ACCESS EXCLUSIVE MODE;
                        """)
                    // Every writer that touched the live tables has committed; every other one waits.
                    do throws(ServiceError) {
                        try readToEnd(phase: "swap", horizon: false)
                        try applyTouched()
                    } catch {
                        failure = error
                        throw ServiceErrorBox(error: error)
                    }
                    try connection.executeScript(
                        """
                        DROP TABLE proj.users;
                        DROP TABLE proj.chain_owners;
                        ALTER TABLE proj.users_next RENAME TO users;
                        ALTER TABLE proj.chain_owners_next RENAME TO chain_owners;
                        ALTER TABLE proj.users RENAME CONSTRAINT users_next_pkey TO users_pkey;
                        ALTER TABLE proj.chain_owners RENAME CONSTRAINT chain_owners_next_pkey TO chain_owners_pkey;
                        ALTER INDEX proj.chain_owners_next_user_id_idx RENAME TO chain_owners_user_id_idx;
                        ALTER INDEX proj.users_next_changed_tx_idx RENAME TO users_changed_tx_idx;
                        """)
                    try ProjectionVersions.record(
                        ProjectionVersions.users, position: position, on: connection)
                }
            } catch let error as DatabaseError {
                throw failure ?? .database(error)
            } catch {
                throw failure ?? .internalError("\(error)")
            }
        }
    }
}
