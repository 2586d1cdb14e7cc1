/// A promotional grant by an admin (api.md §6, `POST /v1/users/{userId}/grants`): one
/// entitlement until `expiresAt`, identified by `grantId`. Unlike the older entitlement-keyed
/// admin grant (`entitlementGranted`), a user may hold several grants of one entitlement, and
/// a revoked or lapsed grant stays listed with `active: false`.
public struct PromotionalGrant: Sendable, Hashable {
    public var userId: String
    /// `grt_…`, chosen by the Service (derived from the idempotency key when one was given).
    public var grantId: String
    public var entitlement: String
    /// End of access (Unix ms): `until`, or the grant's instant plus `duration`.
    public var expiresAt: Int64
    /// The ISO 8601 duration asked for; nil when the admin gave `until`. Kept so a retry with
    /// the same idempotency key can be told from a different request (its `expiresAt` would
    /// differ only because time passed).
    public var duration: String?
    public var reason: String
    public var idempotencyKey: String?
    public var at: Int64

    public init(
        userId: String, grantId: String, entitlement: String, expiresAt: Int64, duration: String?, reason: String,
        idempotencyKey: String?, at: Int64
    ) {
        self.userId = userId
        self.grantId = grantId
        self.entitlement = entitlement
        self.expiresAt = expiresAt
        self.duration = duration
        self.reason = reason
        self.idempotencyKey = idempotencyKey
        self.at = at
    }

    /// The terms a request asked for (what makes a retry "the same request").
    public var term: PromotionalGrantTerm {
        duration.flatMap(ISODuration.init).map(PromotionalGrantTerm.duration) ?? .until(expiresAt)
    }
}

/// How long a grant runs: a duration from the grant's instant (calendar months clamp, as for
/// non-renewing products) or until a fixed instant.
public enum PromotionalGrantTerm: Sendable, Hashable {
    case duration(ISODuration)
    case until(Int64)

    /// The end of access of a grant made at `at`.
    public func expiresAt(from at: Int64) -> Int64 {
        switch self {
        case .duration(let duration): duration.adding(to: at)
        case .until(let instant): instant
        }
    }
}

/// On the user's stream: an admin ended a promotional grant before it ran out. `entitlement`
/// is the grant's, so the change feed can name it without the grant at hand.
public struct PromotionalRevocation: Sendable, Hashable {
    public var userId: String
    public var grantId: String
    public var entitlement: String
    public var at: Int64

    public init(userId: String, grantId: String, entitlement: String, at: Int64) {
        self.userId = userId
        self.grantId = grantId
        self.entitlement = entitlement
        self.at = at
    }
}

/// A grant as the account folds it: the grant and, once revoked, when.
public struct PromotionalGrantState: Sendable, Hashable {
    public var grant: PromotionalGrant
    public var revokedAt: Int64?

    /// When access ends: the grant's end, or its revocation if that came first.
    public var end: Int64 { revokedAt.map { min($0, grant.expiresAt) } ?? grant.expiresAt }

    public func isActive(at now: Int64) -> Bool { now < end }
}
