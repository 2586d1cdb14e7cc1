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
}

extension LedgerService {
    /// Records verified facts: decide per chain, claim chains (for `claimant`, or through an
    /// `appAccountToken` for unclaimed chains), append everything atomically, and re-render the
    /// documents of every user whose view changed — all in one transaction.
    func record(_ batch: FactBatch, claimant: String?, context: RequestContext) throws(ServiceError) -> IngestOutcome {
        let now = clock()
        return try unitOfWork { connection throws(ServiceError) in
            var chainIds = Set(batch.transactions.map(\.fact.originalTransactionId))
            chainIds.formUnion(batch.renewals.map(\.fact.originalTransactionId))
            var streams = chainIds.map(LedgerStream.chain)
            if let notification = batch.notification, notification.fact.originalTransactionId == nil {
                streams.append(LedgerStream.unattachedNotifications)
            }
            try database { () throws(DatabaseError) in try repository.lock(streams, on: connection) }

            let owners = try chainOwners(Array(chainIds), on: connection)
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
            try database { () throws(DatabaseError) in try repository.lock(users.map(LedgerStream.user), on: connection) }

            // One read for every stream this unit decides on: the batch's chains and the users'.
            let userStreamNames = users.map(LedgerStream.user)
            let loaded = try repository.load(streams: streams + userStreamNames, on: connection)
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
            for (fact, payload) in batch.transactions {
                let recorded = decideFact(
                    .recordTransaction(fact), stream: LedgerStream.chain(fact.originalTransactionId), payload: payload)
                outcome.transactions.append((fact, recorded))
            }
            for (fact, payload) in batch.renewals {
                _ = decideFact(
                    .recordRenewalInfo(fact), stream: LedgerStream.chain(fact.originalTransactionId), payload: payload)
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
                    if case .chainClaimed = event { claimedNow.append((otid, user)) }
                    Account.evolve(&accounts[event.stream == LedgerStream.user(user) ? user : owners[otid]!, default: .initial], event)
                    decided.append((event, nil))
                }
            }

            // Highest sequence per stream, for the documents' `version`.
            var lastSeq = loaded.mapValues(\.lastSeq)
            if !decided.isEmpty {
                var expected: [String: Int64] = [:]
                for stream in streams + userStreamNames { expected[stream] = loaded[stream]?.version ?? 0 }
                let key = batch.notification.map { IdempotencyKey(source: "apple-notification", externalId: $0.fact.notificationUUID) }
                guard let recorded = try repository.append(
                    decided, metadata: context.metadata, expected: expected, idempotencyKey: key, on: connection)
                else {
                    // The inbox saw this notification already (a concurrent redelivery won the race).
                    return IngestOutcome(
                        transactions: batch.transactions.map { ($0.fact, false) }, notificationRecorded: false,
                        customer: try claimant.map { user throws(ServiceError) in
                            try documents.store(repository.loadUser(user, on: connection), now: now, on: connection)
                        })
                }
                for event in recorded { lastSeq[event.stream] = max(lastSeq[event.stream] ?? 0, event.seq) }
                if !claimedNow.isEmpty {
                    try database { () throws(DatabaseError) in
                        _ = try connection.execute(
                            """
                            INSERT INTO proj.chain_owners (original_transaction_id, user_id)
                            SELECT * FROM unnest($1::text[], $2::text[])
                            ON CONFLICT (original_transaction_id) DO UPDATE SET user_id = excluded.user_id, claimed_at = now()
                            """, [PostgresArray.literal(claimedNow.map(\.otid)), PostgresArray.literal(claimedNow.map(\.user))])
                    }
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
            let other = try repository.load(streams: otherChains.map(LedgerStream.chain), on: connection)
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
            let rendered = try documents.store(worlds, now: now, on: connection)
            if let claimant { outcome.customer = rendered[claimant] }
            return outcome
        }
    }

    /// Current owners of the given chains (from the inline projection, read under the chains' locks).
    func chainOwners(_ chainIds: [String], on connection: Connection) throws(ServiceError) -> [String: String] {
        guard !chainIds.isEmpty else { return [:] }
        do {
            let rows = try connection.query(
                "SELECT original_transaction_id, user_id FROM proj.chain_owners WHERE original_transaction_id = ANY($1::text[])",
                [PostgresArray.literal(chainIds)])
            var owners: [String: String] = [:]
            for row in 0..<rows.count {
                if let otid = rows[row, 0], let user = rows[row, 1] { owners[otid] = user }
            }
            return owners
        } catch {
            throw .database(error)
        }
    }

    private func appAccountToken(of otid: String, in batch: FactBatch) -> String? {
        batch.transactions.lazy.filter { $0.fact.originalTransactionId == otid }
            .compactMap { $0.fact.appAccountToken }.first { !$0.isEmpty }
    }
}
