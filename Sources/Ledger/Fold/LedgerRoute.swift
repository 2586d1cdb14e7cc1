/// Where an event is folded: into the chain of an originalTransactionId, into a user's account,
/// or nowhere (a notification about no chain is kept for the record, and streams that hold no
/// ledger events, like the catalog's, are no one's state).
public enum LedgerRoute: Sendable, Hashable {
    case chain(String)
    case user(String)
    case unrouted

    /// The route of a stream by its name (`chain:<originalTransactionId>`, `user:<userId>`):
    /// the same as the `route` of every event that stream holds.
    public init(stream: String) {
        if stream.hasPrefix(Self.chainPrefix) {
            self = .chain(String(stream.dropFirst(Self.chainPrefix.count)))
        } else if stream.hasPrefix(Self.userPrefix) {
            self = .user(String(stream.dropFirst(Self.userPrefix.count)))
        } else {
            self = .unrouted
        }
    }

    /// The user of a `.user` route (nil for the others).
    public var userId: String? {
        if case .user(let userId) = self { return userId }
        return nil
    }

    static let chainPrefix = "chain:"
    public static let userPrefix = "user:"
}

extension LedgerEvent {
    /// The event's stream as a route, read off the event itself: folds call it once per event,
    /// so it builds no stream name (that would allocate on every event of a replay).
    public var route: LedgerRoute {
        switch self {
        case .transactionRecorded(let t): .chain(t.originalTransactionId)
        case .renewalInfoRecorded(let r): .chain(r.originalTransactionId)
        case .notificationReceived(let n): n.originalTransactionId.map(LedgerRoute.chain) ?? .unrouted
        case .consumptionAnswered(let answer): .chain(answer.originalTransactionId)
        case .retentionAnswered(let answer): .chain(answer.originalTransactionId)
        case .renewalExtensionRequested(let request): .chain(request.originalTransactionId)
        case .chainClaimed(let userId, _, _, _), .chainReleased(let userId, _, _, _),
            .balanceDebited(let userId, _, _, _, _, _, _), .balanceCredited(let userId, _, _, _, _, _),
            .entitlementGranted(let userId, _, _, _, _), .entitlementRevoked(let userId, _, _, _):
            .user(userId)
        case .promotionalGranted(let grant): .user(grant.userId)
        case .promotionalRevoked(let revocation): .user(revocation.userId)
        case .appAccountTokenRegistered(let userId, _, _, _), .appleAccountShared(let userId, _, _, _),
            .consentRescinded(let userId, _, _):
            .user(userId)
        case .aliasMerged(let userId, _, _, _), .mergedInto(let userId, _, _), .subjectErased(let userId, _):
            .user(userId)
        }
    }

    /// True for the events Apple's facts are (folded into chains), false for users' decisions.
    /// The two kinds touch disjoint state, which lets a fold split them across threads.
    public var isChainEvent: Bool {
        switch self {
        case .transactionRecorded, .renewalInfoRecorded, .notificationReceived, .consumptionAnswered,
            .renewalExtensionRequested, .retentionAnswered:
            true
        case .chainClaimed, .chainReleased, .balanceDebited, .balanceCredited, .entitlementGranted,
            .entitlementRevoked, .promotionalGranted, .promotionalRevoked, .appAccountTokenRegistered,
            .appleAccountShared, .consentRescinded, .aliasMerged, .mergedInto, .subjectErased:
            false
        }
    }
}
