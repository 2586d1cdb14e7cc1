import AppStore
import EventStore
import Infrastructure
import Ledger

extension Identities {
    /// `GET /v1/lookup` for the ids the ledger holds (api.md §7); nil: none matches.
    /// A registered token answers its user even before any transaction carries it; a token
    /// nobody registered answers the chain carrying it and that chain's owner (or null).
    package func lookUp(_ key: SupportLookup.Key) throws(ServiceError) -> SupportLookup.Match? {
        try ledger.historyRead { connection throws(ServiceError) -> SupportLookup.Match? in
            func first(_ query: Query) throws(ServiceError) -> String? {
                let rows = try database { () throws(DatabaseError) in try connection.query(query) }
                return rows.isEmpty ? nil : rows[0, 0]
            }
            func owner(_ chain: String) throws(ServiceError) -> String? { try first(ChainOwnersTable.owner(of: chain)) }
            switch key {
            case .transactionId(let id):
                guard let chain = try first(SupportLookup.chain(ofTransaction: id)) else { return nil }
                return .init(userId: try owner(chain), originalTransactionId: chain, transactionId: id)
            case .originalTransactionId(let chain):
                guard try first(SupportLookup.chainExists(chain)) != nil else { return nil }
                return .init(userId: try owner(chain), originalTransactionId: chain)
            case .appAccountToken(let token):
                let registered = try first(AppAccountTokensTable.owner(of: token))
                let chain = try first(SupportLookup.chain(carrying: token))
                guard registered != nil || chain != nil else { return nil }
                // The token's user when registered (the chain may belong to someone who posted
                // it first), else the chain's own owner.
                var user = registered
                if user == nil, let chain { user = try owner(chain) }
                return .init(userId: user, originalTransactionId: chain)
            case .orderId:
                preconditionFailure("an order id is Apple's: lookUpOrder asks it")
            }
        }
    }
}
