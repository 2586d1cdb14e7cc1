import EventStore
import Ledger

extension LedgerService {
    /// The one shell of account use cases (`AccountUseCase`): in one unit of work (retried on
    /// a conflict), lock and load the account, read the use case's facts, decide, and when the
    /// decision appends: append with the stream version checked, run its writes, render and
    /// store the document and announce its changes; then count them.
    package func run<UseCase: AccountUseCase>(_ useCase: UseCase, context: RequestContext) throws(ServiceError)
        -> UseCase.Outcome
    {
        let now = clock()
        let (outcome, changes) = try unitOfWork {
            connection throws(ServiceError) -> (UseCase.Outcome, [NewChange]) in
            let documents = self.documents  // one catalog version for the decision and the document
            let userId = try lockResolvingAlias(useCase.userId, with: useCase.locks, on: connection)
            let world = try repository.loadUser(userId, on: connection)
            let facts = try useCase.read(userId: userId, on: connection)
            let input = AccountDecisionInput(userId: userId, now: now, documents: documents)
            switch try useCase.decide(world, facts: facts, input: input) {
            case .answer(let outcome):
                return (outcome, [])
            case .append(let events, let writes, let answer):
                guard
                    try repository.append(
                        events.map { ($0, nil) }, metadata: context.metadata,
                        expected: [LedgerStream.user(userId): world.accountVersion], idempotencyKey: nil,
                        on: connection) != nil
                else {
                    throw .internalError("an account append reported a duplicate without an idempotency key")
                }
                // After the append: es.append must be its transaction's first write.
                if !writes.isEmpty {
                    _ = try database { () throws(DatabaseError) in try connection.pipeline(writes.map(\.statement)) }
                }
                let stored = try UserDocumentWriter.storeAnnouncing(
                    repository.loadUser(userId, on: connection), before: world, events: events, documents: documents,
                    now: now, on: connection)
                return (answer(stored.document), stored.changes)
            }
        }
        changeTally.count(changes)
        return outcome
    }
}
