import AppStore
import EventStore
import Infrastructure
import Ledger

extension AppleRequests {
    /// What an order lookup found at Apple and recorded.
    package struct OrderLookupOutcome {
        package var bundleId: String
        package var environment: String
        /// The order's transactions in Apple's order, each with its chain's owner after recording
        /// (nil: unclaimed) and whether it was new (false: a duplicate).
        package var transactions:
            [(transactionId: String, originalTransactionId: String, userId: String?, recorded: Bool)]
    }

    /// `GET /v1/lookup?orderId=` (api.md §7): Apple's Look Up Order ID, asked with each app's
    /// key in turn while Apple does not know the order (status 1, or 4040010 in every
    /// environment); the order's signed transactions are verified and recorded as `sync` does
    /// (`verifiedBatch`, `record`), but for nobody: a chain a registered token names is claimed
    /// by the token's user, any other stays as it was. Nil: no app's Apple knows the order.
    package func lookUpOrder(_ orderId: String, context: RequestContext) throws(ServiceError) -> OrderLookupOutcome? {
        let apps = ledger.configuration.apps.filter { $0.serverAPI != nil }
        guard !apps.isEmpty else {
            throw .serverAPINotConfigured(
                "no app has a serverAPI key: an order id is looked up at Apple's App Store Server API")
        }
        for app in apps {
            let client = app.serverAPI!.client(bundleId: app.bundleId)
            let lookup: OrderLookup
            do {
                lookup = try client.lookUpOrderId(orderId)
            } catch {
                if case .rejected(_, let code?, _) = error, code == AppStoreServerError.transactionIdNotFound {
                    continue
                }
                throw .appStoreServer(error)
            }
            guard lookup.status == OrderLookup.valid, !lookup.signedTransactions.isEmpty else { continue }
            let batch = try verifiedBatch(
                transactions: lookup.signedTransactions,
                statuses: SubscriptionStatuses(environment: lookup.environment, items: []))
            let outcome = try ingestion.record(batch, claimant: nil, context: context)
            let chains = Array(Set(outcome.transactions.map(\.fact.originalTransactionId)))
            // Just written: read on the primary, where the claims are.
            let owners = try ledger.read { connection throws(ServiceError) in
                try database { () throws(DatabaseError) in
                    ChainOwnersTable.owners(from: try connection.query(ChainOwnersTable.ownerRows(of: chains)))
                }
            }
            return OrderLookupOutcome(
                bundleId: app.bundleId, environment: lookup.environment.rawValue,
                transactions: outcome.transactions.map { fact, recorded in
                    (fact.transactionId, fact.originalTransactionId, owners[fact.originalTransactionId], recorded)
                })
        }
        return nil
    }
}
