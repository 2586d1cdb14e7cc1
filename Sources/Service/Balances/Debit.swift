import Infrastructure
import Ledger

/// `POST /v1/users/{userId}/balances/{currency}/debit` (api.md §3): spends from a balance. Run by
/// `LedgerService.run` under the user's stream lock, so concurrent debits are serialized and can
/// never overdraw; the same idempotency key answers as the first debit did.
struct Debit: AccountUseCase {
    struct Outcome {
        /// The user debited: the named one, or the user it is an alias of (api.md §7).
        var userId: String
        var balance: Int64
        var duplicate: Bool
    }

    var userId: String
    var currency: String
    var amount: Int64
    var idempotencyKey: String
    var reason: String

    func decide(_ world: LedgerRepository.UserWorld, facts: Void, input: AccountDecisionInput) throws(ServiceError)
        -> AccountDecision<Outcome>
    {
        if let first = world.account.debit(idempotencyKey: idempotencyKey) {
            guard first.currency == currency, first.debit.amount == amount else {
                throw .rejected(.idempotencyKeyReused(currency: first.currency, amount: first.debit.amount))
            }
            return .answer(Outcome(userId: input.userId, balance: first.debit.balanceAfter, duplicate: true))
        }
        let balance = CustomerView.balance(
            of: currency, account: world.account, chains: world.chains, catalog: input.documents.catalog)
        let events = try decided { () throws(Rejection) in
            try Account.decide(
                .debit(
                    userId: input.userId, currency: currency, amount: amount, idempotencyKey: idempotencyKey,
                    reason: reason, at: input.now),
                world.account, context: AccountContext(balance: balance))
        }
        return .append(events) { _ in Outcome(userId: input.userId, balance: balance - amount, duplicate: false) }
    }
}
