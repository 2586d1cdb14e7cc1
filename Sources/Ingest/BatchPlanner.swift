import EventStore
import Infrastructure
import Ledger

/// Plans what one transaction of ingest records: several verified requests, each with its own
/// `IngestPlanner`, decided and recorded in one transaction with one durable commit (a group
/// commit), or one request by itself (`solo`). Sans I/O like the planner it wraps; the one shell
/// that performs its actions is `Ingestion.perform`.
///
/// Solo, every action of the request's planner passes through, with the ones only a lone
/// request may take: a restart with more locks up front, a read of other chains after the
/// append, a duplicate notification's document stored again. In a batch of several, a member
/// that would need one of them leaves the batch and is recorded solo afterwards:
///
///     start ─▶ lockAndRead(the members' first locks, one sorted set; owners; streams)
///         ─▶ read: per member ─┬─ decided ─────────────────────────────────────────────┐
///                              ├─ refused (keep policy) ─▶ ends rejected               │
///                              └─ needs more locks, or a restart ─▶ ends alone         │
///         ─▶ append(every member's events in one es.append) + the other chains ◀───────┘
///              ├─ duplicate (the one member with an idempotency key) ─▶ it ends alone; append again
///              └─ recorded ─▶ commit(every member's projection writes, then COMMIT)
///         ─▶ committed ─▶ finish: each member answered with its own outcome
///
/// Why this keeps the event store's rules (docs/architecture.md "Group commit"):
/// - Members are admitted only with lock sets disjoint from every member admitted before
///   them, so no stream, user document or chain owner is written by two members. Advisory
///   locks never block their own session, so two members on one stream would otherwise both
///   read version n and both append n+1.
/// - All locks are taken, sorted, in the first statement; a member that would need a lock
///   afterwards leaves (alone: recorded by itself afterwards). Locks are still taken in
///   ascending order by every transaction, so batches and single writers cannot deadlock.
/// - One `es.append` for the batch: still the first write of its transaction (ES001), after
///   every lock, so each stream's `(tx, seq)` order stays its version order. `es.append`
///   takes one idempotency key, so a batch admits at most one member that has one.
package struct BatchPlanner {
    /// How a member ended.
    package enum End {
        case finished(IngestOutcome)
        /// Refused under its locks; nothing of it was written.
        case rejected(Rejection)
        /// Left the batch with nothing written: record it by itself (solo, with its own
        /// retries and errors), so it never fails or delays a neighbour.
        case alone
        /// Solo: restarted too often (`IngestPlanner`'s `giveUp`); nothing was written.
        case gaveUp(String)
    }

    /// The next thing for the shell to do.
    package enum Action {
        /// Take `locks` (sorted) in one statement, then read the owners of `ownersOf`, every
        /// event of `streams` and when the locked users' documents were rendered. Answer with
        /// `read(owners:streams:announced:)`.
        case lockAndRead(locks: [String], ownersOf: [String], streams: [String])
        /// One `es.append` of every member's events (none: skip it), reading `alsoRead` in the
        /// same round trip. Answer with `appended(_:otherChains:)`.
        case append([Member], alsoRead: [String])
        /// The members' projection writes, then COMMIT. Answer with `committed(documents:)`.
        case commit([(member: Int, writes: IngestPlanner.ProjectionWrites)])
        /// Every member has its end (`ends`); end the transaction (COMMIT: nothing unwritten).
        case finish
        /// Something no member can be blamed for (a stream twice): roll back, and every member
        /// records alone.
        case abandon(reason: String)
        /// Solo: end the transaction with nothing written and `start` again (the planner now
        /// locks more up front).
        case restart
        /// Solo: read every event of `streams`; answer with `otherChainsRead(_:)`.
        case read(streams: [String])
        /// Solo: the notification was recorded before and nothing was appended; store the
        /// document of `storeDocumentOf` (if any) as the log has it, then `finishedDuplicate(_:)`.
        case finishDuplicate(IngestOutcome, storeDocumentOf: String?)
    }

    /// One member's append.
    package struct Member {
        package var index: Int
        package var append: IngestPlanner.Append
    }

    package private(set) var planners: [IngestPlanner]
    package private(set) var ends: [End?]
    /// The streams each admitted member locked (its reads are these, its writes within them).
    private var locked: [Int: Set<String>] = [:]
    private var ownersAsked: [Int: [String]] = [:]
    private var appends: [Int: (append: IngestPlanner.Append, alsoRead: [String])] = [:]
    private var reads: [Int: [String]] = [:]
    private var writes: [Int: IngestPlanner.ProjectionWrites] = [:]

    package init(_ planners: [IngestPlanner]) {
        self.planners = planners
        self.ends = Array(repeating: nil, count: planners.count)
    }

    /// One request by itself: its planner's actions pass through (`pass`).
    package var solo: Bool { planners.count == 1 }

    /// How many members are still in the batch.
    package var admitted: Int { locked.count }

    /// Admits members in arrival order, each only if its first locks are disjoint from those
    /// of every member admitted before it (and the first with an idempotency key); the others
    /// end alone.
    package mutating func start(catalogVersion: Int64) -> Action {
        if solo {
            ends[0] = nil
            return pass(planners[0].start(catalogVersion: catalogVersion))
        }
        var taken = Set<String>()
        var keyed = false
        var ownersOf: [String] = []
        for index in planners.indices {
            guard case .lockAndRead(let locks, let owners, _) = planners[index].start(catalogVersion: catalogVersion)
            else {
                ends[index] = .alone
                continue
            }
            let hasKey = planners[index].batch.notification != nil
            guard taken.isDisjoint(with: locks), !(hasKey && keyed) else {
                ends[index] = .alone
                continue
            }
            taken.formUnion(locks)
            keyed = keyed || hasKey
            locked[index] = Set(locks)
            ownersAsked[index] = owners
            ownersOf += owners
        }
        let sorted = taken.sorted()
        return .lockAndRead(locks: sorted, ownersOf: ownersOf.sorted(), streams: sorted)
    }

    /// The answer to `lockAndRead`: each member decides on what it locked.
    package mutating func read(
        owners: [String: String], streams: [String: LedgerRepository.LoadedStream], announced: [String: Int64]
    ) -> Action {
        if solo { return pass(planners[0].read(owners: owners, streams: streams, announced: announced)) }
        for index in locked.keys.sorted() {
            let mine = locked[index]!
            let asked = Set(ownersAsked[index]!)
            let users = Set(mine.compactMap { LedgerRoute(stream: $0).userId })
            let action = planners[index].read(
                owners: owners.filter { asked.contains($0.key) }, streams: streams.filter { mine.contains($0.key) },
                announced: announced.filter { users.contains($0.key) })
            switch action {
            case .append(let append, let alsoRead): appends[index] = (append, alsoRead)
            case .read(let streams): reads[index] = streams
            case .commit(let writes): self.writes[index] = writes
            case .reject(let rejection): leave(index, .rejected(rejection))
            // A second lock round would come after the batch's locks, out of order: alone.
            default: leave(index, .alone)
            }
        }
        return appendOrCommit()
    }

    /// The answer to `append`: what the one `es.append` said (nil: the idempotency key was
    /// seen before, nothing written), and the other chains read with it.
    package mutating func appended(_ recorded: [RecordedEvent]?, otherChains: [String: LedgerRepository.LoadedStream])
        -> Action
    {
        if solo {
            return pass(planners[0].appended(recorded.map { .recorded($0) } ?? .duplicate, otherChains: otherChains))
        }
        guard let recorded else {
            // The member with the key is a redelivery another transaction recorded first. Without
            // it the append is still the transaction's first write (a duplicate writes nothing).
            guard let keyed = appends.keys.first(where: { appends[$0]!.append.idempotencyKey != nil }) else {
                return .abandon(reason: "es.append answered duplicate to no idempotency key")
            }
            appends[keyed] = nil
            leave(keyed, .alone)
            return appendOrCommit()
        }
        var byStream: [String: [RecordedEvent]] = [:]
        for event in recorded { byStream[event.stream, default: []].append(event) }
        for (index, pending) in appends.sorted(by: { $0.key < $1.key }) {
            let streams = Set(pending.append.events.map(\.event.stream))
            let action = planners[index].appended(
                .recorded(streams.flatMap { byStream[$0] ?? [] }.sorted { $0.seq < $1.seq }),
                otherChains: otherChains.filter { pending.alsoRead.contains($0.key) })
            guard case .commit(let writes) = action else {
                return .abandon(reason: "a recorded append led to \(action)")
            }
            self.writes[index] = writes
        }
        for (index, streams) in reads.sorted(by: { $0.key < $1.key }) {
            guard
                case .commit(let writes) = planners[index].otherChainsRead(
                    otherChains.filter { streams.contains($0.key) })
            else { return .abandon(reason: "a read of other chains led elsewhere") }
            self.writes[index] = writes
        }
        appends = [:]
        reads = [:]
        return commit()
    }

    /// The answer to `commit`: the documents rendered and stored, by user.
    package mutating func committed(documents: [String: [UInt8]]) -> Action {
        if solo { return pass(planners[0].committed(documents: documents)) }
        for index in writes.keys.sorted() {
            guard case .finish(let outcome) = planners[index].committed(documents: documents) else {
                preconditionFailure("a committed member finishes")
            }
            ends[index] = .finished(outcome)
        }
        writes = [:]
        return .finish
    }

    /// Solo: the answer to `read(streams:)`.
    package mutating func otherChainsRead(_ streams: [String: LedgerRepository.LoadedStream]) -> Action {
        precondition(solo, "only a lone request reads other chains after its append")
        return pass(planners[0].otherChainsRead(streams))
    }

    /// Solo: the duplicate's answer, its document stored (`finishDuplicate`).
    package mutating func finishedDuplicate(_ outcome: IngestOutcome) -> Action {
        ends[0] = .finished(outcome)
        return .finish
    }

    /// What the shell read of identities for every member (`IdentityReads`), before `read`.
    package mutating func give(_ identities: IdentityReads.Answer) {
        for index in planners.indices { identities.give(to: &planners[index]) }
    }

    /// A lone request's planner, action for action; its ends are the batch's one end.
    private mutating func pass(_ action: IngestPlanner.Action) -> Action {
        switch action {
        case .lockAndRead(let locks, let ownersOf, let streams):
            return .lockAndRead(locks: locks, ownersOf: ownersOf, streams: streams)
        case .restart: return .restart
        case .append(let append, let alsoRead): return .append([Member(index: 0, append: append)], alsoRead: alsoRead)
        case .read(let streams): return .read(streams: streams)
        case .commit(let writes): return .commit([(0, writes)])
        case .finishDuplicate(let outcome, let user): return .finishDuplicate(outcome, storeDocumentOf: user)
        case .finish(let outcome):
            ends[0] = .finished(outcome)
            return .finish
        // Refused or given up before anything was written: the transaction ends empty.
        case .reject(let rejection):
            ends[0] = .rejected(rejection)
            return .finish
        case .giveUp(let reason):
            ends[0] = .gaveUp(reason)
            return .finish
        }
    }

    private mutating func leave(_ index: Int, _ end: End) {
        locked[index] = nil
        ends[index] = end
    }

    private mutating func appendOrCommit() -> Action {
        guard !appends.isEmpty || !reads.isEmpty else { return commit() }
        // Disjoint locks make disjoint appends; checked anyway, since es.append takes each stream once.
        var seen = Set<String>()
        for pending in appends.values {
            let streams = Set(pending.append.events.map(\.event.stream))
            guard seen.isDisjoint(with: streams) else { return .abandon(reason: "two members append to one stream") }
            seen.formUnion(streams)
        }
        let alsoRead = Set(appends.values.flatMap(\.alsoRead)).union(reads.values.joined()).sorted()
        let members = appends.keys.sorted().map { Member(index: $0, append: appends[$0]!.append) }
        return .append(members, alsoRead: alsoRead)
    }

    private mutating func commit() -> Action {
        guard !writes.isEmpty else { return .finish }
        var users = Set<String>()
        for pending in writes.values {
            let mine = Set(pending.users.map(\.userId))
            guard users.isDisjoint(with: mine) else { return .abandon(reason: "two members render one user") }
            users.formUnion(mine)
        }
        return .commit(writes.keys.sorted().map { ($0, writes[$0]!) })
    }
}
