import EventStore
import Ledger

extension LedgerService {
    /// What a debit answered: the balance after it, and whether this call made it.
    struct DebitOutcome {
        /// The user debited: the named one, or the user it is an alias of (api.md §7).
        var userId: String
        var balance: Int64
        var duplicate: Bool
    }

    /// Debits a balance under the user's stream lock, so concurrent debits are serialized and
    /// can never overdraw. The same idempotency key answers as the first debit did.
    func debit(
        userId named: String, currency: String, amount: Int64, idempotencyKey: String, reason: String,
        context: RequestContext
    ) throws(ServiceError) -> DebitOutcome {
        let now = clock()
        let (outcome, changes) = try unitOfWork { connection throws(ServiceError) -> (DebitOutcome, [NewChange]) in
            let documents = self.documents  // one catalog version for the balance and the document
            let userId = try lockResolvingAlias(named, on: connection)
            let world = try repository.loadUser(userId, on: connection)
            if let first = world.account.debit(idempotencyKey: idempotencyKey) {
                guard first.currency == currency, first.debit.amount == amount else {
                    throw .rejected(.idempotencyKeyReused(currency: first.currency, amount: first.debit.amount))
                }
                return (DebitOutcome(userId: userId, balance: first.debit.balanceAfter, duplicate: true), [])
            }
            let balance = CustomerView.balance(
                of: currency, account: world.account, chains: world.chains, catalog: documents.catalog)
            let events: [LedgerEvent]
            do throws(Rejection) {
                events = try Account.decide(
                    .debit(
                        userId: userId, currency: currency, amount: amount, idempotencyKey: idempotencyKey,
                        reason: reason, at: now),
                    world.account, context: AccountContext(balance: balance))
            } catch {
                throw .rejected(error)
            }
            guard
                try repository.append(
                    events.map { ($0, nil) }, metadata: context.metadata,
                    expected: [LedgerStream.user(userId): world.accountVersion], idempotencyKey: nil, on: connection)
                    != nil
            else {
                throw .internalError("debit append reported a duplicate without an idempotency key")
            }
            let stored = try storeAnnouncing(
                repository.loadUser(userId, on: connection), before: world, events: events, documents: documents,
                now: now, on: connection)
            return (DebitOutcome(userId: userId, balance: balance - amount, duplicate: false), stored.changes)
        }
        changeTally.count(changes)
        return outcome
    }
}
