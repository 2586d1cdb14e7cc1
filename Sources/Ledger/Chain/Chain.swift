/// The chain decider: records verified Apple facts about one originalTransactionId.
public enum Chain {
    /// Decides which events a fact adds. The same fact again decides nothing; a transaction
    /// re-signed with new content (refund, reversal, extension) is a new fact.
    public static func decide(_ command: ChainCommand, _ state: ChainState) -> [LedgerEvent] {
        switch command {
        case .recordTransaction(let transaction):
            if let versions = state.transactionVersions[transaction.transactionId], versions.contains(transaction) {
                return []
            }
            return [.transactionRecorded(transaction)]
        case .recordRenewalInfo(let info):
            return state.renewalInfos.contains(info) ? [] : [.renewalInfoRecorded(info)]
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
            .entitlementRevoked:
            break
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
    case recordTransaction(Transaction)
    case recordRenewalInfo(RenewalInfo)
    case recordNotification(NotificationFact)
}
