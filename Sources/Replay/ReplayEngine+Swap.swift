import EventStore
import Foundation
import Identity
import Infrastructure
import Ledger

/// A replay's last phases: catch up with what writers appended meanwhile, then swap the
/// successor tables in under the writers' locks.
extension ReplayEngine.Run {
    /// Re-renders the users and owners the caught-up events touched, in the next tables
    /// (unless dry run), and judges them again against fresh live rows. Answers those users.
    @discardableResult
    package mutating func applyTouched() throws(ServiceError) -> Set<String> {
        let users = state.touched
        var chains = state.touchedChains
        state.touched = []
        state.touchedChains = []
        guard !users.isEmpty || !chains.isEmpty else { return users }
        chains.formUnion(users.flatMap { state.accounts[$0]?.chains ?? [] })
        try reloadLive(users: users, chains: chains)
        var ids: [String] = []
        var versions: [Int64] = []
        var documents: [String] = []
        var validUntils: [Int64?] = []
        for userId in users {
            if state.accounts[userId]?.erased == true {
                judge(userId, rendered: nil)
                continue
            }
            let (document, validUntil, version) = state.render(userId, catalog: catalog, at: now)
            judge(userId, rendered: document)
            ids.append(userId)
            versions.append(version)
            documents.append(String(decoding: document, as: UTF8.self))
            validUntils.append(validUntil)
        }
        for otid in chains { judgeOwner(otid) }
        guard !options.dryRun else { return users }
        let owners = state.owners
        let released = Array(chains.filter { owners[$0] == nil })
        let owned = Array(chains.filter { owners[$0] != nil })
        let now = self.now
        let claimedAt = owned.map { state.claimedAt[$0] ?? now }
        try database { () throws(DatabaseError) in
            if !ids.isEmpty {
                try connection.execute(
                    UserDocumentsTable.upsert(
                        ids: ids, versions: versions, documents: documents, validUntils: validUntils, renderedAt: now,
                        into: .next))
            }
            if !released.isEmpty { try connection.execute(ChainOwnersTable.deleteNext(released)) }
            if !owned.isEmpty {
                try connection.execute(
                    ChainOwnersTable.upsertNext(
                        otids: owned, owners: owned.map { owners[$0]! }, claimedAt: claimedAt))
            }
        }
        return users
    }

    package mutating func swap() throws(ServiceError) {
        var failure: ServiceError?
        var fenced = false
        var lockedAt: Date?
        defer { if fenced { lease?.fenceEnded() } }
        do {
            try connection.transaction { _ in
                // Private to this transaction, so before the fence: nothing else sees it.
                do throws(ServiceError) { try stageCorrections() } catch {
                    failure = error
                    throw ServiceErrorBox(error: error)
                }
                // The alias index from the log, before the locks (its events through a partial
                // index since 0053, but a log may hold many; merges committing meanwhile keep
                // their rows: UserAliasesTable.rebuild).
                try connection.executeScript(UserAliasesTable.rebuild)
                if let fence {
                    do {
                        _ = try connection.query(fence)
                        fenced = true
                        lease?.fencePassed()
                    } catch let error as DatabaseError where error.sqlState == LeaseTable.fencedOutState {
                        failure = .busy("the replay lost its lease (another replay took over); run it again")
                        throw error
                    }
                }
                // Under the replay lease no other swap can move the version: refuse to undo a newer one.
                // (Writers that passed their version check hold proj.users, which the swap locks
                // below; later ones wait for its commit and read the version it records: migration 0033.)
                if !options.dryRun && !options.allowDowngrade,
                    let ahead = ProjectionVersionAhead.all(
                        built: try ProjectionVersions.built(on: connection), definitions: [ProjectionVersions.users]
                    ).first
                {
                    failure = .projectionVersionAhead(ahead)
                    throw ServiceErrorBox(error: .projectionVersionAhead(ahead))
                }
                // Before the table locks (a recorder holds the catalog lock and then writes
                // proj.users): swap only documents of the catalog still in force.
                if let catalogVersion {
                    do {
                        _ = try connection.query(
                            CatalogVersions.requireStatement(catalogVersion).sql,
                            CatalogVersions.requireStatement(catalogVersion).params)
                    } catch let error as DatabaseError where error.sqlState == CatalogVersions.staleVersionState {
                        failure = .busy("a new catalog version was recorded while the replay ran; run it again")
                        throw error
                    }
                }
                // proj.user_aliases first: writers read it before the others (the alias check
                // under their stream locks), so taking it last would deadlock with them.
                try connection.executeScript(
                    """
                    SET LOCAL lock_timeout = '30s';
                    SET LOCAL synchronous_commit = on;
                    LOCK TABLE proj.user_aliases, proj.chain_owners, proj.users, proj.app_account_tokens IN ACCESS EXCLUSIVE MODE;
                    """)
                lockedAt = Date()
                // Users an instance of older code started under their id since migration 0047
                // (before this swap stops such instances): their subject is their id.
                try connection.executeScript(SubjectsTable.registerLegacyStreams)
                // Every writer that touched the live tables has committed; every other one waits.
                do throws(ServiceError) {
                    try readToEnd(phase: "swap", horizon: false)
                    try announceCorrections(rejudged: try applyTouched())
                } catch {
                    failure = error
                    throw ServiceErrorBox(error: error)
                }
                try connection.executeScript(UserDocumentsTable.swapNext + "\n" + ChainOwnersTable.swapNext)
                // The token index follows the log too; registrations wait on the lock above. Both
                // read only their own events, through 0053's partial indexes (ReplaySwapPlanTests).
                try connection.executeScript(AppAccountTokensTable.rebuild + "\n" + AppleAccountsTable.rebuild)
                // The aliases' tokens are their targets' again (the alias index was rebuilt above).
                try connection.executeScript(
                    UserAliasesTable.pointTokensAtTargets + "\n" + AppleAccountsTable.pointAtTargets)
                try ProjectionVersions.record(
                    ProjectionVersions.users, position: position, on: connection)
            }
            // How long readers and writers of the live tables waited, commit included.
            if let lockedAt { report.phases.append(("swap.locked", Int64(Date().timeIntervalSince(lockedAt) * 1000))) }
        } catch let error as DatabaseError {
            throw failure ?? .database(error)
        } catch {
            throw failure ?? .internalError("\(error)")
        }
    }
}
