import EventStore
import Foundation
import Infrastructure
import Ledger

/// A replay's middle phase: render every document, judge it against the live one, and load
/// the successor tables (their SQL is `UserDocumentsTable`'s and `ChainOwnersTable`'s).
extension ReplayEngine.Run {
    /// A second connection has read the live tables (after the fold's reads, as judging needs:
    /// `readToEnd`), then loads and indexes the next chain owners, while this one loads the users: they are
    /// rendered in chunks on several threads straight into COPY rows, each chunk loaded on a
    /// helper thread while the next renders. Only users whose document differs from the
    /// live one are judged (an equal one is unchanged by definition).
    package mutating func renderAndLoad() throws(ServiceError) {
        if !options.dryRun { try createNextTables() }
        let (side, reading) = try liveReading()
        var ownerRows: [UInt8] = []
        if !options.dryRun {
            ownerRows.reserveCapacity(state.owners.count * 48)
            for (otid, user) in state.owners {
                ChainOwnersTable.appendCopyRow(
                    otid: otid, userId: user, claimedAt: state.claimedAt[otid] ?? now, into: &ownerRows)
            }
        }
        let current = try reading.wait()
        report.phases.append(("renderLoad.live", Int64(Date().timeIntervalSince(phaseStart) * 1000)))
        var renderSeconds = 0.0
        var waitSeconds = 0.0
        live = current.users
        liveOwners = current.owners
        let owners: Background<Void>? =
            options.dryRun
            ? nil
            : Background { [ownerRows] () throws(ServiceError) in
                try database { () throws(DatabaseError) in
                    if !ownerRows.isEmpty { try side.copyIn(ChainOwnersTable.copyIntoNext, data: ownerRows) }
                    try side.executeScript(ChainOwnersTable.indexNext)
                }
            }
        var loading: Background<Void>?
        do {
            // An erased person's account keeps its chains and money, and has no document.
            let users = state.accounts.compactMap { $0.value.erased ? nil : $0.key }
            let chunk = 4096 * ReplayEngine.parallelism
            var start = 0
            while start < users.count {
                let end = min(users.count, start + chunk)
                let renderStart = Date()
                let rendered = Self.render(
                    users[start..<end], state: state, catalog: catalog, at: now, against: live, rows: !options.dryRun)
                renderSeconds += Date().timeIntervalSince(renderStart)
                for (userId, document) in rendered.differing { judge(userId, rendered: document) }
                if !options.dryRun {
                    let waitStart = Date()
                    try loading?.wait()
                    waitSeconds += Date().timeIntervalSince(waitStart)
                    loading = copyInBackground(UserDocumentsTable.copyIntoNext, rendered.rows)
                }
                start = end
                tick("render")
            }
            let waitStart = Date()
            try loading?.wait()
            try owners?.wait()
            waitSeconds += Date().timeIntervalSince(waitStart)
            report.phases.append(("renderLoad.render", Int64(renderSeconds * 1000)))
            report.phases.append(("renderLoad.waitForServer", Int64(waitSeconds * 1000)))
            if !options.dryRun {
                // The second connection is free again: it builds two of the users' indexes
                // while this one builds the key (`buildIndexes`).
                otherIndexes = Background { () throws(ServiceError) in
                    try database { () throws(DatabaseError) in
                        try side.executeScript(UserDocumentsTable.indexNextOthers)
                    }
                }
            }
        } catch {
            _ = try? loading?.wait()
            _ = try? owners?.wait()
            throw error
        }
        for userId in live.keys where state.accounts[userId] == nil || state.accounts[userId]!.erased {
            judge(userId, rendered: nil)
        }
        for (otid, owner) in liveOwners where state.owners[otid] != owner { changedOwners.insert(otid) }
        for otid in state.owners.keys where liveOwners[otid] == nil { changedOwners.insert(otid) }
    }

    package func copyInBackground(_ sql: String, _ rows: [UInt8]) -> Background<Void>? {
        guard !rows.isEmpty else { return nil }
        let connection = self.connection
        return Background { () throws(ServiceError) in
            try database { () throws(DatabaseError) in try connection.copyIn(sql, data: rows) }
        }
    }

    /// Renders `users` on `parallelism` threads (the state is only read): the `proj.users`
    /// COPY rows (when `rows`), and the documents that differ from `live`, in order.
    package static func render(
        _ users: ArraySlice<String>, state: ReplayState, catalog: Catalog, at now: Int64,
        against live: [String: LiveRow], rows: Bool
    ) -> (rows: [UInt8], differing: [(String, [UInt8])]) {
        let base = users.startIndex
        let pieces = ReplayEngine.inParts(users.count) { range -> (rows: [UInt8], differing: [(String, [UInt8])]) in
            var out: [UInt8] = []
            if rows { out.reserveCapacity(range.count * 768) }
            var differing: [(String, [UInt8])] = []
            for index in (base + range.lowerBound)..<(base + range.upperBound) {
                let userId = users[index]
                let (document, validUntil, version) = state.render(userId, catalog: catalog, at: now)
                if !sameBytes(live[userId]?.document, document) { differing.append((userId, document)) }
                if rows {
                    UserDocumentsTable.appendCopyRow(
                        userId: userId, version: version, document: document, renderedAt: now,
                        validUntil: validUntil, into: &out)
                }
            }
            return (out, differing)
        }
        var result = pieces.first ?? ([], [])
        for piece in pieces.dropFirst() {
            result.rows.append(contentsOf: piece.rows)
            result.differing.append(contentsOf: piece.differing)
        }
        return result
    }

    /// Whether a live document has exactly the rendered bytes, compared with `memcmp`: the
    /// arrays' `==` went byte by byte through `UInt8`'s `Equatable` witness (~10 % of the
    /// render's CPU in a profile, for every user).
    package static func sameBytes(_ live: [UInt8]?, _ rendered: [UInt8]) -> Bool {
        guard let live, live.count == rendered.count else { return false }
        guard !rendered.isEmpty else { return true }
        return live.withUnsafeBytes { a in
            rendered.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, b.count) == 0 }
        }
    }

    package func createNextTables() throws(ServiceError) {
        try database { () throws(DatabaseError) in
            try connection.executeScript(UserDocumentsTable.createNext + "\n" + ChainOwnersTable.createNext)
        }
    }

    /// Indexes after the load (faster than maintaining them row by row): the key here, the
    /// users' other indexes on the second connection meanwhile (the chain owners' were built
    /// there during the load), then the statistics.
    package func buildIndexes() throws(ServiceError) {
        tick("index")
        do {
            try database { () throws(DatabaseError) in try connection.executeScript(UserDocumentsTable.indexNextKey) }
        } catch {
            _ = try? otherIndexes?.wait()
            throw error
        }
        try otherIndexes?.wait()
        try database { () throws(DatabaseError) in try connection.executeScript(UserDocumentsTable.analyzeNext) }
    }
}
