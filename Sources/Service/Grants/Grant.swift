import Infrastructure
import Ledger

/// `POST /v1/users/{userId}/grants` (api.md §6): records a promotional grant. A retry with the
/// same idempotency key (hence the same `grantId`) and the same request answers the first grant
/// again; with another request it is refused, as debits are.
struct Grant: AccountUseCase {
    /// The grant (the first one, for a retry) and the user's document.
    struct Outcome {
        var grant: PromotionalGrant
        var customer: [UInt8]
        /// false: the idempotency key named a grant made before; nothing was appended.
        var created: Bool
    }

    var userId: String
    var grantId: String
    var entitlement: String
    var term: PromotionalGrantTerm
    var reason: String
    var idempotencyKey: String?

    func decide(_ world: LedgerRepository.UserWorld, facts: Void, input: AccountDecisionInput) throws(ServiceError)
        -> AccountDecision<Outcome>
    {
        let events = try decided { () throws(Rejection) in
            try Account.decide(
                .promote(
                    userId: input.userId, grantId: grantId, entitlement: entitlement, term: term, reason: reason,
                    idempotencyKey: idempotencyKey, at: input.now),
                world.account)
        }
        guard case .promotionalGranted(let made)? = events.first else {
            let first = world.account.promotions[grantId]!.grant  // decide answers [] only for a known grant
            return .answer(
                Outcome(grant: first, customer: input.documents.render(world, at: input.now).document, created: false))
        }
        return .append(events) { document in Outcome(grant: made, customer: document, created: true) }
    }
}

/// `DELETE /v1/users/{userId}/grants/{grantId}`: ends a grant now. Revoking a revoked or lapsed
/// grant changes nothing and appends nothing (the same answer); an id the user never had is 404.
/// Answers the user's document.
struct RevokeGrant: AccountUseCase {
    var userId: String
    var grantId: String

    func decide(_ world: LedgerRepository.UserWorld, facts: Void, input: AccountDecisionInput) throws(ServiceError)
        -> AccountDecision<[UInt8]>
    {
        let events = try decided { () throws(Rejection) in
            try Account.decide(.revokePromotion(userId: input.userId, grantId: grantId, at: input.now), world.account)
        }
        if events.isEmpty { return .answer(input.documents.render(world, at: input.now).document) }
        return .append(events) { $0 }
    }
}
