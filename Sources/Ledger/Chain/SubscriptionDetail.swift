import JSON

/// The chain as `GET /v1/subscriptions/{originalTransactionId}` shows it: owner, judged state,
/// every transaction (newest signed version of each) and every renewal info recorded.
public struct SubscriptionDetail: Sendable, Hashable {
    public var originalTransactionId: String
    public var owner: String?
    public var judged: ChainStatus?
    /// Ordered by purchaseDate, then transactionId.
    public var transactions: [Transaction]
    /// Ordered by signedDate (oldest first); the last one counts.
    public var renewalInfos: [RenewalInfo]

    public init(originalTransactionId: String, owner: String?, chain: ChainState, at now: Int64) {
        self.originalTransactionId = originalTransactionId
        self.owner = owner
        judged = chain.status(at: now)
        transactions = chain.latestTransactions
        var infos = chain.renewalInfos
        infos.sort { $1.supersedes($0) }
        renewalInfos = infos
    }

    public func jsonBytes() -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        w.beginObject()
        w.key("originalTransactionId")
        w.string(originalTransactionId)
        w.key("owner")
        w.stringOrNull(owner)
        w.key("state")
        if let judged {
            SubscriptionView(originalTransactionId: originalTransactionId, judged: judged).write(to: &w)
        } else {
            w.null()
        }
        w.key("transactions")
        w.beginArray()
        for t in transactions {
            w.beginObject()
            t.writeFields(to: &w)
            w.endObject()
        }
        w.endArray()
        w.key("renewalInfos")
        w.beginArray()
        for r in renewalInfos {
            w.beginObject()
            r.writeFields(to: &w)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}
