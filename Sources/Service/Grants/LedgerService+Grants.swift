import EventStore
import Ledger

extension LedgerService {
    /// What a grant answered: the grant (the first one, for a retry) and the user's document.
    struct GrantOutcome {
        var grant: PromotionalGrant
        var customer: [UInt8]
        /// false: the idempotency key named a grant made before; nothing was appended.
        var created: Bool
    }

    /// Records a promotional grant under the user's stream lock (api.md §6). A retry with the
    /// same idempotency key (hence the same `grantId`) and the same request answers the first
    /// grant again; with another request it is refused, as debits are.
    func grant(
        userId named: String, grantId: String, entitlement: String, term: PromotionalGrantTerm, reason: String,
        idempotencyKey: String?, context: RequestContext
    ) throws(ServiceError) -> GrantOutcome {
        let now = clock()
        let (outcome, changes) = try unitOfWork { connection throws(ServiceError) -> (GrantOutcome, [NewChange]) in
            let documents = self.documents
            let userId = try lockResolvingAlias(named, on: connection)
            let world = try repository.loadUser(userId, on: connection)
            let events = try Self.decided(
                .promote(
                    userId: userId, grantId: grantId, entitlement: entitlement, term: term, reason: reason,
                    idempotencyKey: idempotencyKey, at: now),
                world.account)
            guard case .promotionalGranted(let made)? = events.first else {
                let first = world.account.promotions[grantId]!.grant  // decide answers [] only for a known grant
                return (
                    GrantOutcome(grant: first, customer: documents.render(world, at: now).document, created: false), []
                )
            }
            let stored = try appendAnnouncing(
                events, world: world, documents: documents, now: now, context: context,
                on: connection)
            return (GrantOutcome(grant: made, customer: stored.document, created: true), stored.changes)
        }
        changeTally.count(changes)
        return outcome
    }

    /// Ends a grant now. Revoking a revoked or lapsed grant changes nothing and appends nothing
    /// (the same answer); an id the user never had is 404.
    func revokeGrant(userId named: String, grantId: String, context: RequestContext) throws(ServiceError) -> [UInt8] {
        let now = clock()
        let (document, changes) = try unitOfWork { connection throws(ServiceError) -> ([UInt8], [NewChange]) in
            let documents = self.documents
            let userId = try lockResolvingAlias(named, on: connection)
            let world = try repository.loadUser(userId, on: connection)
            let events = try Self.decided(.revokePromotion(userId: userId, grantId: grantId, at: now), world.account)
            if events.isEmpty { return (documents.render(world, at: now).document, []) }
            let stored = try appendAnnouncing(
                events, world: world, documents: documents, now: now, context: context,
                on: connection)
            return (stored.document, stored.changes)
        }
        changeTally.count(changes)
        return document
    }

    private static func decided(_ command: AccountCommand, _ account: Account) throws(ServiceError) -> [LedgerEvent] {
        do throws(Rejection) {
            return try Account.decide(command, account)
        } catch {
            throw .rejected(error)
        }
    }

    /// Appends the user's events (the stream version checked) and renders and announces the
    /// document after them in the same transaction.
    func appendAnnouncing(
        _ events: [LedgerEvent], world: LedgerRepository.UserWorld, documents: UserDocuments, now: Int64,
        context: RequestContext, on connection: Connection
    ) throws(ServiceError) -> (document: [UInt8], changes: [NewChange]) {
        guard
            try repository.append(
                events.map { ($0, nil) }, metadata: context.metadata,
                expected: [LedgerStream.user(world.userId): world.accountVersion], idempotencyKey: nil, on: connection)
                != nil
        else {
            throw .internalError("grant append reported a duplicate without an idempotency key")
        }
        return try storeAnnouncing(
            repository.loadUser(world.userId, on: connection), before: world, events: events, documents: documents,
            now: now, on: connection)
    }
}
