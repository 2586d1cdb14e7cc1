import EventStore
import Identity
import Infrastructure
import Ledger

/// Plans the recording of one verified batch without doing any of it (sans I/O, the way
/// postgres-nio's state machines work): each input — the start of an attempt, what a read
/// found, what the append answered, the commit — returns the next `Action` for the shell in
/// `Ingestion.swift` to perform. No I/O, no clock, no log: `now` is given.
///
///     start ─▶ lockAndRead(chains + up-front users) ─▶ read(owners, streams)
///                 ├─ an owner sorts before a locked user ─▶ restart(lockUpFront:)   (start again)
///                 ├─ owners to lock after them ─▶ lockAndRead(users) ─▶ read(streams) ─┐
///                 └─ all locked ───────────────────────────────────────────────────────┤
///                                                                   decide (pure) ◀────┘
///                 ├─ a keep-policy claim ─▶ reject
///                 ├─ events ─▶ append(+ other chains) ─▶ appended ─┬─ duplicate ─▶ finishDuplicate
///                 │                                                └─ recorded ─▶ commit ─┐
///                 ├─ no events, other chains ─▶ read(other chains) ─▶ commit ─────────────┤
///                 └─ no events ─▶ commit ─────────────────────────────────────────────────┤
///                                                            committed ─▶ finish(outcome) ◀┘
package struct IngestPlanner {
    /// Lock-order restarts before giving up (the request fails with 500 and nothing written).
    /// A restart needs a chain of the batch to change hands, to a user sorting before one
    /// already locked, between two attempts milliseconds apart; each restart locks every user
    /// seen so far, so only a storm of concurrent transfers of the same chains needs more.
    /// Seven is the bound the unit of work used to share with it (eight attempts).
    package static let restartLimit = 7

    package let batch: FactBatch
    package let claimant: String?
    package let policy: TransferPolicy
    package let now: Int64
    /// The chains the batch's facts belong to.
    package let chainIds: Set<String>
    /// Chains of the batch migrated from another (Apple's `previousOriginalTransactionId`,
    /// api.md §8) → that chain, whose owner claims them.
    package let previousChains: [String: String]
    /// The streams the facts go to: their chains, and the unattached notifications' stream
    /// for a notification about no chain.
    package let factStreams: [String]
    /// Users locked together with the chains, before their owners are read: the claimant, and
    /// owners an earlier attempt could not lock in order. It only grows, across attempts.
    package private(set) var lockedUpFront: Set<String>
    /// Registered appAccountTokens of the batch (lowercased) → their users (api.md §7), read by
    /// the shell before each attempt (`tokensToLookUp`): the planner does no I/O.
    package var registeredTokens: [String: String] = [:]
    /// The batch's appTransactionIds → the users their Apple Account was seen with before
    /// (`appTransactionIdsToLookUp`, read by the shell like `registeredTokens`).
    package var appleAccountUsers: [String: Set<String>] = [:]
    /// The users of `rescindedAppleAccount` (read by the shell the same way): each is told.
    package var rescindedUsers: Set<String> = []
    /// Users found to be aliases (alias → target, api.md §7): a token naming one claims for its target.
    package var aliasTargets: [String: String] = [:]
    package private(set) var restarts = 0
    package private(set) var state: State = .idle

    package init(batch: FactBatch, claimant: String?, policy: TransferPolicy, now: Int64) {
        self.batch = batch
        self.claimant = claimant
        self.policy = policy
        self.now = now
        var chainIds = Set(batch.transactions.map(\.fact.originalTransactionId))
        chainIds.formUnion(batch.renewals.map(\.fact.originalTransactionId))
        self.chainIds = chainIds
        var previous: [String: String] = [:]
        for (fact, _) in batch.transactions {
            if let from = fact.previousOriginalTransactionId, from != fact.originalTransactionId {
                previous[fact.originalTransactionId] = from
            }
        }
        self.previousChains = previous
        var streams = chainIds.sorted().map(LedgerStream.chain)
        if let notification = batch.notification, notification.fact.originalTransactionId == nil {
            streams.append(LedgerStream.unattachedNotifications)
        }
        self.factStreams = streams
        self.lockedUpFront = claimant.map { [$0] } ?? []
    }

    /// Where the plan is: what the last action waits for.
    package enum State {
        /// Before an attempt, or after a restart.
        case idle
        /// Waits for the owners of the chains and the locked streams.
        case lockingChains(Attempt)
        /// Waits for the streams of owners locked after everything locked before (they sort after).
        case lockingOwners(Attempt, Reads)
        /// Waits for `es.append`'s answer (and the other chains of the users to re-render).
        case appending(Decision)
        /// Nothing to append; waits for the other chains of the users to re-render.
        case readingOtherChains(Decision)
        /// Waits for the projection writes and COMMIT.
        case committing(Decision)
        case done
    }

    /// One attempt: one transaction, one catalog version.
    package struct Attempt {
        package var catalogVersion: Int64
        /// `lockedUpFront`, sorted: the order their locks were taken in.
        package var upFront: [String]
    }

    /// What the attempt's reads found so far.
    package struct Reads {
        package var owners: [String: String]
        package var streams: [String: LedgerRepository.LoadedStream]
        package var users: Set<String>
        /// originalTransactionId → who claims it in this batch.
        package var claims: [String: String]
        /// When each locked user's stored document was rendered (absent: none stored).
        package var announced: [String: Int64]
    }

    /// The next thing for the shell to do.
    package enum Action {
        /// In one round trip: take the streams' advisory locks in this order (sorted: the order
        /// every writer takes them in), then read the owners of `ownersOf`, every event of
        /// `streams` and when the stored documents of the users among `locks` were rendered.
        /// Answer with `read(owners:streams:announced:)`.
        case lockAndRead(locks: [String], ownersOf: [String], streams: [String])
        /// End the transaction with nothing written (releasing its locks) and `start` again:
        /// `lockUpFront` are now locked together with the chains.
        case restart(lockUpFront: [String])
        /// Append atomically, reading `alsoRead` in the same round trip. Answer with
        /// `appended(_:otherChains:)`.
        case append(Append, alsoRead: [String])
        /// Read every event of `streams`. Answer with `otherChainsRead(_:)`.
        case read(streams: [String])
        /// Write the projection rows, then COMMIT, in one round trip. Answer with `committed(documents:)`.
        case commit(ProjectionWrites)
        /// The inbox had the notification already: nothing was appended; store the document of
        /// `storeDocumentOf` (if any) as the log has it, end the transaction, answer `outcome`.
        case finishDuplicate(IngestOutcome, storeDocumentOf: String?)
        /// Done: answer `outcome`.
        case finish(IngestOutcome)
        /// A claim was refused (the `keep` policy): roll back, answer the rejection.
        case reject(Rejection)
        /// Too many restarts: roll back, fail with `reason`.
        case giveUp(reason: String)
    }

    /// Starts an attempt under the catalog `catalogVersion` (also after a restart, or after a
    /// database failure abandoned the previous attempt anywhere).
    package mutating func start(catalogVersion: Int64) -> Action {
        let upFront = lockedUpFront.sorted()
        state = .lockingChains(Attempt(catalogVersion: catalogVersion, upFront: upFront))
        // Every writer takes its locks in stream-name order ("apple:" < "chain:" < "user:"). The
        // reads follow the locks in the same pipeline: each statement takes a fresh READ
        // COMMITTED snapshot, so they see what the locks' previous holders committed.
        let locks = Array(Set(factStreams + upFront.map(LedgerStream.user))).sorted()
        let ownersOf = chainIds.union(previousChains.values)
        return .lockAndRead(locks: locks, ownersOf: ownersOf.sorted(), streams: locks)
    }

    /// The answer to `lockAndRead`: the owners of the chains asked about and the streams' events.
    package mutating func read(
        owners: [String: String], streams: [String: LedgerRepository.LoadedStream], announced: [String: Int64] = [:]
    ) -> Action {
        switch state {
        case .lockingChains(let attempt):
            let claims = claims(owners: owners)
            let users = Set(owners.values).union(claims.values).union(rescindedTargets)
            let reads = Reads(owners: owners, streams: streams, users: users, claims: claims, announced: announced)
            let missing = users.subtracting(attempt.upFront).sorted()
            guard !missing.isEmpty else { return advance(decide(attempt, reads)) }
            if let highest = attempt.upFront.last, missing[0] < highest {
                // Locking it now would break the order: start over with it locked up front
                // (nothing was written; a chain changing hands is rare).
                state = .idle
                guard restarts < Self.restartLimit else {
                    state = .done
                    return .giveUp(reason: "users \(missing) must be locked before \(highest)")
                }
                restarts += 1
                lockedUpFront.formUnion(users)
                return .restart(lockUpFront: lockedUpFront.sorted())
            }
            // They sort after every lock held: take them now, in order.
            state = .lockingOwners(attempt, reads)
            let more = missing.map(LedgerStream.user)
            return .lockAndRead(locks: more, ownersOf: [], streams: more)
        case .lockingOwners(let attempt, var reads):
            reads.streams.merge(streams) { _, new in new }
            reads.announced.merge(announced) { _, new in new }
            return advance(decide(attempt, reads))
        default:
            preconditionFailure("read(owners:streams:) answers lockAndRead, not in \(state)")
        }
    }

    /// The answer to `append`: what `es.append` said, and the other chains read with it.
    package mutating func appended(_ answer: AppendAnswer, otherChains: [String: LedgerRepository.LoadedStream])
        -> Action
    {
        guard case .appending(var decision) = state else {
            preconditionFailure("appended(_:otherChains:) answers append, not in \(state)")
        }
        switch answer {
        case .duplicate:
            // The inbox saw this notification already (a concurrent redelivery won the race).
            state = .done
            return .finishDuplicate(
                IngestOutcome(transactions: batch.transactions.map { ($0.fact, false) }, notificationRecorded: false),
                storeDocumentOf: claimant)
        case .recorded(let recorded):
            for event in recorded {
                decision.lastSeq[event.stream] = max(decision.lastSeq[event.stream] ?? 0, event.seq)
            }
            decision.fold(otherChains)
            return commit(decision)
        }
    }

    /// The answer to `read(streams:)`.
    package mutating func otherChainsRead(_ streams: [String: LedgerRepository.LoadedStream]) -> Action {
        guard case .readingOtherChains(var decision) = state else {
            preconditionFailure("otherChainsRead(_:) answers read(streams:), not in \(state)")
        }
        decision.fold(streams)
        return commit(decision)
    }

    /// The answer to `commit`: the documents rendered and stored, by user.
    package mutating func committed(documents: [String: [UInt8]]) -> Action {
        guard case .committing(let decision) = state else {
            preconditionFailure("committed(documents:) answers commit, not in \(state)")
        }
        state = .done
        var outcome = decision.outcome
        if let claimant { outcome.customer = documents[claimant] }
        return .finish(outcome)
    }

    private mutating func advance(_ decided: Decided) -> Action {
        switch decided {
        case .rejected(let rejection):
            state = .done
            return .reject(rejection)
        case .append(let decision, let append, let alsoRead):
            state = .appending(decision)
            return .append(append, alsoRead: alsoRead)
        case .read(let decision, let streams):
            state = .readingOtherChains(decision)
            return .read(streams: streams)
        case .commit(let decision):
            return commit(decision)
        }
    }

    /// Plans the projection writes of a decision whose reads are all done.
    private mutating func commit(_ decision: Decision) -> Action {
        state = .committing(decision)
        let users = decision.worlds()
        return .commit(
            ProjectionWrites(
                catalogVersion: users.isEmpty ? nil : decision.catalogVersion, chainOwners: decision.claimedNow,
                users: users, changeInputs: users.map(decision.changeInput(for:)),
                events: decision.decided.map(\.event),
                appleAccounts: decision.appleAccounts))
    }
}
