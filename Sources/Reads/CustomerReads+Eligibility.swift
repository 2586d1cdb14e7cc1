import EventStore
import Identity
import Infrastructure
import Ledger

extension CustomerReads {
    /// The users of the Apple Accounts a user bought with that are asked about, at most: a
    /// shared device seen with many users must not make one question load them all.
    package static let eligibilityAppleAccountUsers = 20

    /// `GET /v1/users/{userId}/eligibility?productId=P` (read, api.md §8): whether the user (with
    /// their aliases) or anyone who bought with the same Apple Account already had an
    /// introductory offer or any subscription in P's subscription group — Apple's rule. The group
    /// is the catalog's `group` for P, else the `subscriptionGroupIdentifier` Apple recorded with
    /// P's transactions.
    package func eligibility(userId named: String, productId: String) throws(ServiceError)
        -> (answer: IntroductoryOfferEligibility, group: String?)
    {
        let catalog = ledger.documents.catalog
        let configured = catalog.products[productId]
        if let configured, configured.type != .subscription {
            throw .notAutoRenewable(
                "\(productId) is a \(configured.type.rawValue) product: only subscriptions have introductory offers")
        }
        return try ledger.read { connection throws(ServiceError) in
            let user = try ledger.resolveUser(named, on: connection)
            let world = try ledger.repository.loadUser(user, on: connection)
            let own = Array(world.chains.values)
            var group = configured?.group ?? Self.recordedGroup(of: productId, in: own)
            if group == nil {
                let rows = try database { () throws(DatabaseError) in
                    try connection.query(Self.recordedGroupQuery(of: productId))
                }
                if rows.count > 0 {
                    group = rows[0, 0]
                } else if configured == nil {
                    throw .notFound("product \(productId) is neither in the catalog nor in any recorded transaction")
                }
            }
            // Who else bought with the Apple Accounts the user's purchases carry.
            let accounts = Set(own.flatMap { $0.transactionVersions.values.joined().compactMap(\.appTransactionId) })
            var others: [(String, [ChainState])] = []
            if !accounts.isEmpty {
                let rows = try database { () throws(DatabaseError) in
                    try connection.query(AppleAccountsTable.allUsers(of: accounts.sorted()))
                }
                let users = Set(AppleAccountsTable.users(from: rows).values.joined()).subtracting([user])
                for other in users.sorted().prefix(Self.eligibilityAppleAccountUsers) {
                    others.append((other, Array(try ledger.repository.loadUser(other, on: connection).chains.values)))
                }
            }
            let answer = IntroductoryOfferEligibility.decide(
                productId: productId, group: group, catalog: catalog, own: own, others: others)
            return (answer, group)
        }
    }

    /// The group Apple recorded with a transaction of `productId` among `chains`, if any.
    private static func recordedGroup(of productId: String, in chains: [ChainState]) -> String? {
        for chain in chains {
            for transaction in chain.transactionVersions.values.joined()
            where transaction.productId == productId && transaction.subscriptionGroupIdentifier != nil {
                return transaction.subscriptionGroupIdentifier
            }
        }
        return nil
    }

    /// The group Apple recorded with any transaction of `productId` (one row; none: never
    /// recorded). Without an index on the product it may read much of the log: a catalog
    /// that declares each subscription's `group` never asks it.
    private static func recordedGroupQuery(of productId: String) -> Query {
        """
        SELECT data->>'subscriptionGroupIdentifier' FROM es.events
        WHERE type = 'TransactionRecorded' AND data->>'productId' = \(productId)
          AND data ? 'subscriptionGroupIdentifier'
        LIMIT 1
        """
    }
}
