/// The chain decider: records verified Apple facts about one originalTransactionId.
public enum Chain {
    /// Decides which events a fact adds. The same fact again decides nothing; a transaction
    /// re-signed with new content (refund, reversal, extension) is a new fact. A *copy* (what a
    /// client posts or the Server API answers) that only carries a newer `signedDate` than the
    /// version in force is the same fact too.
    public static func decide(_ command: ChainCommand, _ state: ChainState) -> [LedgerEvent] {
        switch command {
        case .recordTransaction(let transaction):
            if let versions = state.transactionVersions[transaction.transactionId], versions.contains(transaction) {
                return []
            }
            return [.transactionRecorded(transaction)]
        case .recordTransactionCopy(let transaction):
            guard let versions = state.transactionVersions[transaction.transactionId] else {
                return [.transactionRecorded(transaction)]
            }
            // A fact's identity is its content other than `signedDate` (docs/domain.md): StoreKit and
            // the Server API re-sign what they hand out, so a copy of the version in force is
            // the same fact. So is an older copy of any recorded version: it can never win.
            let inForce = ChainState.newest(versions)
            if transaction.hasSameContent(as: inForce) { return [] }
            if transaction.signedDate <= inForce.signedDate, versions.contains(where: transaction.hasSameContent) {
                return []
            }
            return [.transactionRecorded(transaction)]
        case .recordRenewalInfo(let info):
            return state.renewalInfos.contains(info) ? [] : [.renewalInfoRecorded(info)]
        case .recordRenewalInfoCopy(let info):
            guard let inForce = state.latestRenewalInfo else { return [.renewalInfoRecorded(info)] }
            if info.hasSameContent(as: inForce) { return [] }
            if info.signedDate <= inForce.signedDate, state.renewalInfos.contains(where: info.hasSameContent) {
                return []
            }
            return [.renewalInfoRecorded(info)]
        case .recordNotification(let notification):
            return state.notifications[notification.notificationUUID] == nil
                ? [.notificationReceived(notification)] : []
        }
    }

    /// Folds one event into the state. Boring on purpose: it only stores what it is given.
    public static func evolve(_ state: ChainState, _ event: LedgerEvent) -> ChainState {
        var state = state
        evolve(&state, event)
        return state
    }

    /// In-place form of `evolve` (no copy of the dictionaries: use it in folds).
    public static func evolve(_ state: inout ChainState, _ event: LedgerEvent) {
        switch event {
        case .transactionRecorded(let transaction):
            state.transactionVersions[transaction.transactionId, default: []].append(transaction)
        case .renewalInfoRecorded(let info):
            state.renewalInfos.append(info)
        case .notificationReceived(let notification):
            state.notifications[notification.notificationUUID] = notification
        case .chainClaimed, .chainReleased, .balanceDebited, .balanceCredited, .entitlementGranted,
            .entitlementRevoked, .promotionalGranted, .promotionalRevoked, .appAccountTokenRegistered,
            .appleAccountShared, .consentRescinded, .aliasMerged, .mergedInto, .subjectErased:
            break
        case .consumptionAnswered, .renewalExtensionRequested, .retentionAnswered:
            break  // the record of a request to or from Apple: it changes no fact
        }
    }

    /// `events.reduce(.initial, evolve)`, without copies.
    public static func fold(_ events: some Sequence<LedgerEvent>, into state: ChainState = .initial) -> ChainState {
        var state = state
        for event in events { evolve(&state, event) }
        return state
    }
}

/// Commands for the chain decider (imperative: record this verified fact).
public enum ChainCommand: Sendable, Hashable {
    /// A fact Apple pushed (a notification's payload): every distinct signed version counts,
    /// because arrival order means nothing. A refund reversal re-signs the content from before
    /// the refund, and may arrive before the refund it reverses; only its newer `signedDate`
    /// lets it win then, so it is kept.
    case recordTransaction(Transaction)
    /// A copy handed out on request (StoreKit in the app, the Server API): Apple re-signs
    /// those every time, so the version in force re-signed is a duplicate, and the log does
    /// not grow each time an app posts its current entitlements. The change it could hide (a
    /// reversal ahead of its refund) comes with Apple's REFUND_REVERSED notification, which
    /// records it through `recordTransaction`.
    case recordTransactionCopy(Transaction)
    case recordRenewalInfo(RenewalInfo)
    /// A renewal info handed out on request: like `recordTransactionCopy`.
    case recordRenewalInfoCopy(RenewalInfo)
    case recordNotification(NotificationFact)
}
