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

            let loaded = try repository.load(streams: streams, on: connection)
            var chainStates = loaded.mapValues { Chain.fold($0.events) }
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
            var accountVersions: [String: Int64] = [:]
            let userStreams = try repository.load(streams: users.map(LedgerStream.user), on: connection)
            for user in users {
                let stream = userStreams[LedgerStream.user(user)]
                accounts[user] = Account.fold(stream?.events ?? [])
                accountVersions[LedgerStream.user(user)] = stream?.version ?? 0
            }
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

            if !decided.isEmpty {
                var expected = loaded.mapValues(\.version)
                for stream in streams where expected[stream] == nil { expected[stream] = 0 }
                expected.merge(accountVersions) { _, account in account }
                let key = batch.notification.map { IdempotencyKey(source: "apple-notification", externalId: $0.fact.notificationUUID) }
                if try repository.append(
                    decided, metadata: context.metadata, expected: expected, idempotencyKey: key, on: connection) == nil
                {
                    // The inbox saw this notification already (a concurrent redelivery won the race).
                    return IngestOutcome(
                        transactions: batch.transactions.map { ($0.fact, false) }, notificationRecorded: false,
                        customer: try claimant.map { user throws(ServiceError) in
                            try documents.store(repository.loadUser(user, on: connection), now: now, on: connection)
                        })
                }
                for (otid, user) in claimedNow {
                    do throws(DatabaseError) {
                        _ = try connection.execute(
                            """
                            INSERT INTO proj.chain_owners (original_transaction_id, user_id) VALUES ($1, $2)
                            ON CONFLICT (original_transaction_id) DO UPDATE SET user_id = excluded.user_id, claimed_at = now()
                            """, [otid, user])
                    } catch {
                        throw .database(error)
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
            for user in affected.sorted() {
                let world = try repository.loadUser(user, on: connection)
                let document = try documents.store(world, now: now, on: connection)
                if user == claimant { outcome.customer = document }
            }
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

/// PostgreSQL array literals for `$n::text[]` parameters (still bound, never concatenated into SQL).
enum PostgresArray {
    static func literal(_ items: [String]) -> String {
        var text = "{"
        for (index, item) in items.enumerated() {
            if index > 0 { text += "," }
            text += "\""
            for character in item.unicodeScalars {
                if character == "\"" || character == "\\" { text += "\\" }
                text.unicodeScalars.append(character)
            }
            text += "\""
        }
        return text + "}"
    }
}
