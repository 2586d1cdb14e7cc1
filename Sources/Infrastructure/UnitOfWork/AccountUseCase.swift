import EventStore
import Ledger

/// A write use case on one user's account (issue 37, item 1: use cases, not a service object).
/// It is a decider — the account as loaded, the facts it read and the time in, what to append
/// and what to answer out — and `LedgerService.run` is the one shell that runs every one of
/// them: it locks and loads the account (an alias acts on its target, api.md §7), reads the
/// facts, decides, appends with the stream's version checked (es.append first, ES001), writes
/// what the decision asks after it, renders and announces the document, in one transaction.
package protocol AccountUseCase: Sendable {
    /// What the decision needs beyond the account, read in the transaction under the locks.
    associatedtype Facts = Void
    associatedtype Outcome

    /// The user as the call names them (possibly an alias).
    var userId: String { get }
    /// Advisory locks besides the user's stream lock, taken with it in one sorted call.
    var locks: [String] { get }

    /// Reads the facts, under the locks, for the resolved user.
    func read(userId: String, on connection: Connection) throws(ServiceError) -> Facts

    /// The decision: pure, from the account, the facts and `input`.
    func decide(_ world: LedgerRepository.UserWorld, facts: Facts, input: AccountDecisionInput) throws(ServiceError)
        -> AccountDecision<Outcome>
}

extension AccountUseCase {
    package var locks: [String] { [] }
}

extension AccountUseCase where Facts == Void {
    package func read(userId: String, on connection: Connection) throws(ServiceError) {}
}

/// What every decision is given besides the account.
package struct AccountDecisionInput {
    /// The user acted on: the one named, or the target of the alias named.
    package var userId: String
    package var now: Int64
    /// The catalog in force for this unit of work, and its renderer.
    package var documents: UserDocuments
}

/// What a use case decided.
package enum AccountDecision<Outcome> {
    /// Nothing to append: answer so (an idempotent retry, a revocation of a lapsed grant).
    case answer(Outcome)
    /// Append `events` to the user's stream, then run `writes` (projection rows the events
    /// imply, after the append), then answer from the document stored after them.
    case append([LedgerEvent], writes: [Query] = [], answer: (_ document: [UInt8]) -> Outcome)
}

/// A decision's `Rejection` (the domain's refusal) as the service's error.
package func decided<T>(_ decide: () throws(Rejection) -> T) throws(ServiceError) -> T {
    do throws(Rejection) {
        return try decide()
    } catch {
        throw .rejected(error)
    }
}
