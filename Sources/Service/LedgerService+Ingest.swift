import EventStore
import Ledger

/// Verified facts ready to record, each with the signed source it came from.
struct FactBatch {
    var transactions: [(fact: Transaction, payload: String?)] = []
    var renewals: [(fact: RenewalInfo, payload: String?)] = []
    var notification: (fact: NotificationFact, payload: String)?
}

/// What recording a batch did.
struct IngestOutcome {
    /// Each transaction of the batch and whether it was new (false: duplicate).
    var transactions: [(fact: Transaction, recorded: Bool)] = []
    /// For a notification: false when it had been received before.
    var notificationRecorded = false
    /// The claimant's document after the write (purchases only).
    var customer: [UInt8]?
    /// Chains this write moved to the claimant: originalTransactionId → the previous owner.
    var transferredFrom: [String: String] = [:]
}

extension LedgerService {
    /// Records verified facts: decide per chain, claim chains (for `claimant`, or through an
    /// `appAccountToken` for unclaimed chains), append everything atomically, and re-render the
    /// documents of every user whose view changed — all in one transaction.
    ///
    /// Three round trips for a purchase, each a pipeline: (BEGIN,) lock the chains and the
    /// claimant, read the chains' owners, read every locked stream; append (and read the other
    /// chains of the users to re-render); write the projections and COMMIT.
    func record(_ batch: FactBatch, claimant: String?, context: RequestContext) throws(ServiceError) -> IngestOutcome {
        let now = clock()
        // Users whose streams are locked together with the chains, before the owners are read:
        // the claimant, and owners that an earlier attempt found it could not lock in order.
        var lockedUpFront: Set<String> = claimant.map { [$0] } ?? []
        return try unitOfWork { connection throws(ServiceError) in
            let documents = self.documents  // one catalog version per attempt (its writes check it)
            var chainIds = Set(batch.transactions.map(\.fact.originalTransactionId))
            chainIds.formUnion(batch.renewals.map(\.fact.originalTransactionId))
            var streams = chainIds.map(LedgerStream.chain)
            if let notification = batch.notification, notification.fact.originalTransactionId == nil {
                streams.append(LedgerStream.unattachedNotifications)
            }
            // Every writer takes its locks in stream-name order ("apple:" < "chain:" < "user:").
            // The reads follow the locks in the same pipeline: each statement takes a fresh
            // READ COMMITTED snapshot, so they see what the locks' previous holders committed.
            let upFront = lockedUpFront.sorted()
            let locks = Array(Set(streams + upFront.map(LedgerStream.user))).sorted()
            let first = [repository.store.lockStatement(locks), chainOwnersStatement(Array(chainIds)),
                         repository.loadStatement(streams: locks)]
            let firstResults = try database { () throws(DatabaseError) in
                try connection.pipeline(first.compactMap { $0 })
            }
            let owners = first[1] == nil ? [:] : chainOwners(from: firstResults[first[0] == nil ? 0 : 1])
            var loaded = first[2] == nil ? [:] : try repository.decode(firstResults.last!)

            // Who claims what: the posting user claims every chain of the batch; otherwise an
            // unclaimed chain goes to the user its appAccountToken names.
            var claims: [String: String] = [:]
            for otid in chainIds {
                if let claimant {
                    claims[otid] = claimant
                } else if owners[otid] == nil, let token = appAccountToken(of: otid, in: batch) {
                    claims[otid] = token
                }
            }
            let users = Set(owners.values).union(claims.values)
            let missing = users.subtracting(upFront).sorted()
            if !missing.isEmpty {
                if let highest = upFront.last, missing[0] < highest {
                    // Locking it now would break the order: start over with it locked up front
                    // (nothing was written; a chain changing hands is rare).
                    lockedUpFront.formUnion(users)
                    throw .conflict("users \(missing) must be locked before \(highest)")
                }
                let more = missing.map(LedgerStream.user)
                let results = try database { () throws(DatabaseError) in
                    try connection.pipeline([repository.store.lockStatement(more)!, repository.loadStatement(streams: more)!])
                }
                loaded.merge(try repository.decode(results[1])) { _, new in new }
            }
            let userStreamNames = users.map(LedgerStream.user)

            var chainStates: [String: ChainState] = [:]
            for stream in streams { chainStates[stream] = Chain.fold(loaded[stream]?.events ?? []) }
            var decided: [(event: LedgerEvent, payload: String?)] = []
            var outcome = IngestOutcome()

            func decideFact(_ command: ChainCommand, stream: String, payload: String?) -> Bool {
                let events = Chain.decide(command, chainStates[stream] ?? .initial)
                for event in events {
                    Chain.evolve(&chainStates[stream, default: .initial], event)
                    decided.append((event, payload))
                }
                return !events.isEmpty
            }
            if let notification = batch.notification {
                let stream = notification.fact.originalTransactionId.map(LedgerStream.chain)
                    ?? LedgerStream.unattachedNotifications
                outcome.notificationRecorded = decideFact(
                    .recordNotification(notification.fact), stream: stream, payload: notification.payload)
            }
            // What Apple pushed counts version by version; what a client posts (or Apple answers
            // on request) is a copy, and a copy of the version in force is a duplicate.
            let pushed = batch.notification != nil
            for (fact, payload) in batch.transactions {
                let recorded = decideFact(
                    pushed ? .recordTransaction(fact) : .recordTransactionCopy(fact),
                    stream: LedgerStream.chain(fact.originalTransactionId), payload: payload)
                outcome.transactions.append((fact, recorded))
            }
            for (fact, payload) in batch.renewals {
                _ = decideFact(
                    pushed ? .recordRenewalInfo(fact) : .recordRenewalInfoCopy(fact),
                    stream: LedgerStream.chain(fact.originalTransactionId), payload: payload)
            }

            var accounts: [String: Account] = [:]
            for user in users { accounts[user] = Account.fold(loaded[LedgerStream.user(user)]?.events ?? []) }
            var claimedNow: [(otid: String, user: String)] = []
            for (otid, user) in claims.sorted(by: { $0.key < $1.key }) {
                let command = AccountCommand.claim(
                    userId: user, originalTransactionId: otid, policy: configuration.ledgerTransferPolicy, at: now)
                let events: [LedgerEvent]
                do throws(Rejection) {
                    events = try Account.decide(command, accounts[user] ?? .initial, context: AccountContext(chainOwner: owners[otid]))
                } catch {
                    throw .rejected(error)
                }
                for event in events {
                    if case .chainClaimed(_, _, let from, _) = event {
                        claimedNow.append((otid, user))
                        if let from { outcome.transferredFrom[otid] = from }
                    }
                    Account.evolve(&accounts[event.stream == LedgerStream.user(user) ? user : owners[otid]!, default: .initial], event)
                    decided.append((event, nil))
                }
            }

            // Re-render every user whose view changed: claimants, previous owners, and the
            // owners of chains that received new facts.
            var affected = Set(claimedNow.map(\.user)).union(claimedNow.compactMap { owners[$0.otid] })
            for (event, _) in decided {
                if case .chainClaimed = event { continue }
                if event.stream.hasPrefix("chain:"), let owner = owners[String(event.stream.dropFirst(6))] {
                    affected.insert(owner)
                }
            }
            if let claimant { affected.insert(claimant) }
            // Their documents are rendered from the state already folded here; only chains a user
            // owns outside this batch still have to be read.
            let otherChains = Set(affected.flatMap { accounts[$0]?.chains ?? [] }).subtracting(chainIds)
            let otherQuery = repository.loadStatement(streams: otherChains.map(LedgerStream.chain))

            // Highest sequence per stream, for the documents' `version`.
            var lastSeq = loaded.mapValues(\.lastSeq)
            var other: [String: LedgerRepository.LoadedStream] = [:]
            if !decided.isEmpty {
                var expected: [String: Int64] = [:]
                for stream in streams + userStreamNames { expected[stream] = loaded[stream]?.version ?? 0 }
                let key = batch.notification.map { IdempotencyKey(source: "apple-notification", externalId: $0.fact.notificationUUID) }
                let request = repository.appendRequest(
                    decided, metadata: context.metadata, expected: expected, idempotencyKey: key)
                // The read of the other chains goes along with the append (reads only).
                var second = [request.statement!]
                if let otherQuery { second.append(otherQuery) }
                let results = try database { () throws(DatabaseError) in try connection.pipeline(second) }
                guard let recorded = try repository.appended(request, results[0]) else {
                    // The inbox saw this notification already (a concurrent redelivery won the race).
                    return IngestOutcome(
                        transactions: batch.transactions.map { ($0.fact, false) }, notificationRecorded: false,
                        customer: try claimant.map { user throws(ServiceError) in
                            try documents.store(repository.loadUser(user, on: connection), now: now, on: connection)
                        })
                }
                for event in recorded { lastSeq[event.stream] = max(lastSeq[event.stream] ?? 0, event.seq) }
                if otherQuery != nil { other = try repository.decode(results[1]) }
            } else if otherQuery != nil {
                other = try repository.load(streams: otherChains.map(LedgerStream.chain), on: connection)
            }
            for (stream, loadedStream) in other {
                chainStates[stream] = Chain.fold(loadedStream.events)
                lastSeq[stream] = loadedStream.lastSeq
            }
            var worlds: [LedgerRepository.UserWorld] = []
            for user in affected.sorted() {
                var world = LedgerRepository.UserWorld(userId: user)
                world.account = accounts[user] ?? .initial
                world.lastSeq = lastSeq[LedgerStream.user(user)] ?? 0
                for otid in world.account.chains {
                    let stream = LedgerStream.chain(otid)
                    world.chains[otid] = chainStates[stream] ?? .initial
                    world.lastSeq = max(world.lastSeq, lastSeq[stream] ?? 0)
                }
                worlds.append(world)
            }

            // The projection writes and COMMIT in one round trip.
            var last: [Connection.Statement] = []
            let (upsert, rendered) = documents.upsert(worlds, now: now)
            // The catalog check first: it may wait for a recorder, and must not hold row locks then.
            if upsert != nil { last.append(documents.catalogCheck) }
            if !claimedNow.isEmpty { last.append(chainOwnersUpsert(claimedNow)) }
            if let upsert { last.append(upsert) }
            try database { () throws(DatabaseError) in _ = try connection.commit(after: last) }
            if let claimant { outcome.customer = rendered[claimant] }
            return outcome
        }
    }

    /// Current owners of the given chains (from the inline projection, read under the chains' locks).
    func chainOwners(_ chainIds: [String], on connection: Connection) throws(ServiceError) -> [String: String] {
        guard let statement = chainOwnersStatement(chainIds) else { return [:] }
        return chainOwners(from: try database { () throws(DatabaseError) in
            try connection.query(statement.sql, statement.params)
        })
    }

    func chainOwnersStatement(_ chainIds: [String]) -> Connection.Statement? {
        guard !chainIds.isEmpty else { return nil }
        let (condition, parameters) = PostgresArray.membership("original_transaction_id", chainIds, firstParameter: 1)
        return Connection.Statement(
            "SELECT original_transaction_id, user_id FROM proj.chain_owners WHERE \(condition)", parameters)
    }

    func chainOwners(from rows: Rows) -> [String: String] {
        var owners: [String: String] = [:]
        for row in 0..<rows.count {
            if let otid = rows[row, 0], let user = rows[row, 1] { owners[otid] = user }
        }
        return owners
    }

    /// Records who claimed which chain in the inline projection (a plain VALUES row for one
    /// claim, whose plan is cached; unnest over bound arrays is planned on every execution).
    func chainOwnersUpsert(_ claimed: [(otid: String, user: String)]) -> Connection.Statement {
        let onConflict = "ON CONFLICT (original_transaction_id) DO UPDATE SET user_id = excluded.user_id, claimed_at = now()"
        if claimed.count == 1 {
            return Connection.Statement(
                "INSERT INTO proj.chain_owners (original_transaction_id, user_id) VALUES ($1, $2) \(onConflict)",
                [claimed[0].otid, claimed[0].user])
        }
        return Connection.Statement(
            """
            INSERT INTO proj.chain_owners (original_transaction_id, user_id)
            SELECT * FROM unnest($1::text[], $2::text[])
            \(onConflict)
            """, [PostgresArray.literal(claimed.map(\.otid)), PostgresArray.literal(claimed.map(\.user))])
    }

    private func appAccountToken(of otid: String, in batch: FactBatch) -> String? {
        batch.transactions.lazy.filter { $0.fact.originalTransactionId == otid }
            .compactMap { $0.fact.appAccountToken }.first { !$0.isEmpty }
    }
}
