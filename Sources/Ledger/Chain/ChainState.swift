/// Everything recorded about one `originalTransactionId` (a subscription, or a one-off
/// purchase whose originalTransactionId equals its transactionId).
///
/// The state keeps every version it was given, in arrival order; order independence lives in
/// how it is read (`latestTransactions`, `latestRenewalInfo`, `status(at:)`).
public struct ChainState: Sendable, Hashable {
    /// Every recorded version, per transactionId.
    public internal(set) var transactionVersions: [String: [Transaction]]
    /// Every recorded renewal info.
    public internal(set) var renewalInfos: [RenewalInfo]
    /// Received notifications by `notificationUUID`.
    public internal(set) var notifications: [String: NotificationFact]

    public static let initial = ChainState(transactionVersions: [:], renewalInfos: [], notifications: [:])

    /// Any recorded fact names the chain; nil before the first one.
    public var originalTransactionId: String? {
        if let first = transactionVersions.first?.value.first { return first.originalTransactionId }
        return renewalInfos.first?.originalTransactionId
    }

    /// The winning version of each transaction, ordered by purchaseDate then transactionId.
    public var latestTransactions: [Transaction] {
        var result: [Transaction] = []
        result.reserveCapacity(transactionVersions.count)
        for versions in transactionVersions.values { result.append(Self.newest(versions)) }
        result.sort { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
        return result
    }

    /// The winning version of one transaction.
    public func latest(transactionId: String) -> Transaction? {
        transactionVersions[transactionId].map(Self.newest)
    }

    /// The renewal info with the newest signedDate.
    public var latestRenewalInfo: RenewalInfo? {
        guard var best = renewalInfos.first else { return nil }
        for info in renewalInfos.dropFirst() where info.supersedes(best) { best = info }
        return best
    }

    static func newest(_ versions: [Transaction]) -> Transaction { versions[newestIndex(versions)] }

    /// Where the winning version is: comparing in place copies no `Transaction` (a copy retains
    /// each of its strings, and a render asks this of every transaction it shows).
    static func newestIndex(_ versions: [Transaction]) -> Int {
        var best = 0
        for index in versions.indices.dropFirst() where versions[index].supersedes(versions[best]) { best = index }
        return best
    }
}
