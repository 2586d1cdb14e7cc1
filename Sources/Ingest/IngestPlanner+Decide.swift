import EventStore
import Identity
import Infrastructure
import Ledger

extension IngestPlanner {
    /// What the batch decided under its locks, and what re-rendering still needs.
    package struct Decision {
        package var catalogVersion: Int64
        package var decided: [(event: LedgerEvent, payload: String?)] = []
        package var outcome = IngestOutcome()
        package var claimedNow: [ChainClaim] = []
        /// Apple Accounts seen on an owner's chain for the first time.
        package var appleAccounts: [AppleAccountsTable.Use] = []
        package var chainStates: [String: ChainState] = [:]
        package var accounts: [String: Account] = [:]
        /// Highest sequence per stream, for the documents' `version`.
        package var lastSeq: [String: Int64] = [:]
        /// The users whose view changed, to re-render.
        package var affected: Set<String> = []
        /// What the users' documents were built from before this batch, for the change feed:
        /// their accounts and every chain as read under the locks (the other chains, read
        /// after the decision, are unchanged by it and join both sides).
        package var accountsBefore: [String: Account] = [:]
        package var chainStatesBefore: [String: ChainState] = [:]
        package var lastSeqBefore: [String: Int64] = [:]
        /// When each user's stored document was rendered (read under the user's lock): the
        /// instant the feed has announced the user's state up to.
        package var announced: [String: Int64] = [:]

        /// Folds streams read after the decision (the other chains of the users to re-render).
        package mutating func fold(_ streams: [String: LedgerRepository.LoadedStream]) {
            for (stream, loaded) in streams {
                let state = Chain.fold(loaded.events)
                chainStates[stream] = state
                chainStatesBefore[stream] = state
                lastSeq[stream] = loaded.lastSeq
                lastSeqBefore[stream] = loaded.lastSeq
            }
        }

        /// What the affected users' documents are built from, sorted by user.
        package func worlds() -> [LedgerRepository.UserWorld] {
            affected.sorted().map { user in
                var world = LedgerRepository.UserWorld(userId: user)
                world.account = accounts[user] ?? .initial
                world.lastSeq = lastSeq[LedgerStream.user(user)] ?? 0
                for otid in world.account.chains {
                    let stream = LedgerStream.chain(otid)
                    world.chains[otid] = chainStates[stream] ?? .initial
                    world.lastSeq = max(world.lastSeq, lastSeq[stream] ?? 0)
                }
                return world
            }
        }

        /// What `world`'s user had before the batch: the input of the change detector.
        package func changeInput(for world: LedgerRepository.UserWorld) -> ChangeInput {
            let account = accountsBefore[world.userId] ?? .initial
            var chains: [String: ChainState] = [:]
            var version = lastSeqBefore[LedgerStream.user(world.userId)] ?? 0
            for otid in account.chains {
                let stream = LedgerStream.chain(otid)
                chains[otid] = chainStatesBefore[stream] ?? .initial
                version = max(version, lastSeqBefore[stream] ?? 0)
            }
            return ChangeInput(
                userId: world.userId, before: ChangeDetector.Facts(account: account, chains: chains, version: version),
                announcedAt: announced[world.userId])
        }
    }

    /// Who claims what: the posting user claims every chain of the batch; otherwise an
    /// unclaimed chain migrated from another (api.md §8) goes to that chain's owner, else to the
    /// user its appAccountToken is registered to (api.md §7), or, for an unregistered token, to
    /// the user whose id it is (the older convention). The claim is recorded as the usual
    /// ChainClaimed event, so a replay reproduces it from the log alone.
    package func claims(owners: [String: String]) -> [String: String] {
        var claims: [String: String] = [:]
        for otid in chainIds {
            if let claimant {
                claims[otid] = claimant
            } else if owners[otid] == nil, let previous = previousChains[otid], let owner = owners[previous] {
                claims[otid] = owner
            } else if owners[otid] == nil, let token = appAccountToken(of: otid) {
                let user = registeredTokens[token.lowercased()] ?? token
                claims[otid] = aliasTargets[user] ?? user
            }
        }
        return claims
    }

    /// Where a decision leads.
    package enum Decided {
        /// A claim was refused.
        case rejected(Rejection)
        /// Events to append (and the other chains of the users to re-render, read alongside).
        case append(Decision, Append, alsoRead: [String])
        /// Nothing to append, but other chains to read before re-rendering.
        case read(Decision, streams: [String])
        /// Nothing to append or read: on to the projection writes.
        case commit(Decision)
    }

    /// Decides every fact and claim against the states read under the locks, and what follows.
    package func decide(_ attempt: Attempt, _ reads: Reads) -> Decided {
        var decision = Decision(catalogVersion: attempt.catalogVersion)
        let loaded = reads.streams
        for stream in factStreams { decision.chainStates[stream] = Chain.fold(loaded[stream]?.events ?? []) }
        decision.chainStatesBefore = decision.chainStates
        decision.announced = reads.announced

        func decideFact(_ command: ChainCommand, stream: String, payload: String?) -> Bool {
            let events = Chain.decide(command, decision.chainStates[stream] ?? .initial)
            for event in events {
                Chain.evolve(&decision.chainStates[stream, default: .initial], event)
                decision.decided.append((event, payload))
            }
            return !events.isEmpty
        }
        if let notification = batch.notification {
            let stream =
                notification.fact.originalTransactionId.map(LedgerStream.chain)
                ?? LedgerStream.unattachedNotifications
            decision.outcome.notificationRecorded = decideFact(
                .recordNotification(notification.fact), stream: stream, payload: notification.payload)
        }
        // What Apple pushed counts version by version; what a client posts (or Apple answers
        // on request) is a copy, and a copy of the version in force is a duplicate.
        let pushed = batch.notification != nil
        for (fact, payload) in batch.transactions {
            let recorded = decideFact(
                pushed ? .recordTransaction(fact) : .recordTransactionCopy(fact),
                stream: LedgerStream.chain(fact.originalTransactionId), payload: payload)
            decision.outcome.transactions.append((fact, recorded))
        }
        for (fact, payload) in batch.renewals {
            _ = decideFact(
                pushed ? .recordRenewalInfo(fact) : .recordRenewalInfoCopy(fact),
                stream: LedgerStream.chain(fact.originalTransactionId), payload: payload)
        }

        let owners = reads.owners
        for user in reads.users {
            decision.accounts[user] = Account.fold(loaded[LedgerStream.user(user)]?.events ?? [])
        }
        decision.accountsBefore = decision.accounts
        for (otid, user) in reads.claims.sorted(by: { $0.key < $1.key }) {
            let command = AccountCommand.claim(userId: user, originalTransactionId: otid, policy: policy, at: now)
            let events: [LedgerEvent]
            do throws(Rejection) {
                events = try Account.decide(
                    command, decision.accounts[user] ?? .initial, context: AccountContext(chainOwner: owners[otid]))
            } catch {
                return .rejected(error)
            }
            for event in events {
                if case .chainClaimed(_, _, let from, _) = event {
                    decision.claimedNow.append(ChainClaim(originalTransactionId: otid, userId: user))
                    if let from { decision.outcome.transferredFrom[otid] = from }
                }
                // A transfer's release goes to the previous owner's stream.
                let account = event.stream == LedgerStream.user(user) ? user : owners[otid]!
                Account.evolve(&decision.accounts[account, default: .initial], event)
                decision.decided.append((event, nil))
            }
        }

        if let rejection = noteAppleAccounts(&decision, owners: owners) { return .rejected(rejection) }
        if let rejection = rescindConsent(&decision) { return .rejected(rejection) }

        // Re-render every user whose view changed: claimants, previous owners, the owners of
        // chains that received new facts (and of Apple Accounts seen before).
        decision.affected = Set(decision.claimedNow.map(\.userId))
            .union(decision.claimedNow.compactMap { owners[$0.originalTransactionId] })
        for (event, _) in decision.decided {
            if case .chainClaimed = event { continue }
            switch event {
            case .appleAccountShared(let user, _, _, _), .consentRescinded(let user, _, _):
                decision.affected.insert(user)
            default: break
            }
            if event.stream.hasPrefix("chain:"), let owner = owners[String(event.stream.dropFirst(6))] {
                decision.affected.insert(owner)
            }
        }
        if let claimant { decision.affected.insert(claimant) }
        decision.lastSeq = loaded.mapValues(\.lastSeq)
        decision.lastSeqBefore = decision.lastSeq

        // Their documents are rendered from the state already folded here; only chains a user
        // owns outside this batch still have to be read.
        let otherChains = Set(decision.affected.flatMap { decision.accounts[$0]?.chains ?? [] })
            .subtracting(chainIds).sorted().map(LedgerStream.chain)
        if !decision.decided.isEmpty {
            var expected: [String: Int64] = [:]
            for stream in factStreams + reads.users.map(LedgerStream.user) {
                expected[stream] = loaded[stream]?.version ?? 0
            }
            let key = batch.notification.map { IdempotencyKey.appleNotification($0.fact.notificationUUID) }
            return .append(
                decision, Append(events: decision.decided, expected: expected, idempotencyKey: key),
                alsoRead: otherChains)
        }
        return otherChains.isEmpty ? .commit(decision) : .read(decision, streams: otherChains)
    }

    /// api.md §7: each chain's owner after the claims, for every appTransactionId the batch's
    /// transactions carry, is noted as a user of that Apple Account, and a user without a token
    /// gets an AppleAccountShared event per other user seen with it before (the hint the
    /// Customer shows as `sameAppleAccountAs`). Who was seen before was read with the attempt's
    /// first locks, before the users are: two first purchases racing from one Apple Account may
    /// both miss the other (a hint, not a fact — the next purchase of either notes it).
    private func noteAppleAccounts(_ decision: inout Decision, owners: [String: String]) -> Rejection? {
        let claimed = Dictionary(decision.claimedNow.map { ($0.originalTransactionId, $0.userId) }) { _, last in last }
        var seen = Set<AppleAccountsTable.Use>()
        for (fact, _) in batch.transactions {
            guard let id = fact.appTransactionId, !id.isEmpty,
                let owner = claimed[fact.originalTransactionId] ?? owners[fact.originalTransactionId],
                seen.insert(AppleAccountsTable.Use(appTransactionId: id, userId: owner)).inserted
            else { continue }
            let before = appleAccountUsers[id] ?? []
            if !before.contains(owner) {
                decision.appleAccounts.append(AppleAccountsTable.Use(appTransactionId: id, userId: owner))
            }
            let command = AccountCommand.noteAppleAccount(
                userId: owner, appTransactionId: id, others: before.sorted(), at: now)
            do throws(Rejection) {
                for event in try Account.decide(command, decision.accounts[owner] ?? .initial) {
                    Account.evolve(&decision.accounts[owner, default: .initial], event)
                    decision.decided.append((event, nil))
                }
            } catch {
                return error
            }
        }
        return nil
    }

    /// api.md §8: a RESCIND_CONSENT tells every user seen with its Apple Account, once each, by
    /// an event on their stream (their Customer's `consentRescindedAt`, a CONSENT_RESCINDED change).
    private func rescindConsent(_ decision: inout Decision) -> Rejection? {
        guard let account = rescindedAppleAccount, let fact = batch.notification?.fact else { return nil }
        for user in rescindedTargets.sorted() {
            do throws(Rejection) {
                let command = AccountCommand.rescindConsent(
                    userId: user, appTransactionId: account, at: fact.signedDate)
                for event in try Account.decide(command, decision.accounts[user] ?? .initial) {
                    Account.evolve(&decision.accounts[user, default: .initial], event)
                    decision.decided.append((event, nil))
                }
            } catch {
                return error
            }
        }
        return nil
    }

    private func appAccountToken(of otid: String) -> String? {
        batch.transactions.lazy.filter { $0.fact.originalTransactionId == otid }
            .compactMap { $0.fact.appAccountToken }.first { !$0.isEmpty }
    }
}
