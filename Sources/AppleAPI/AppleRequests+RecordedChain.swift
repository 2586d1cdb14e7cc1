import AppStore
import EventStore
import Infrastructure
import Ledger

extension AppleRequests {
    /// What an admin call to Apple about one chain needs first: its newest transaction (nil: no
    /// purchase of it was recorded) and its owner (nil: nobody claimed it yet).
    package func recordedChain(_ otid: String, on connection: Connection) throws(ServiceError)
        -> (latest: Transaction?, owner: String?)
    {
        let stream = LedgerStream.chain(otid)
        guard let loaded = try ledger.repository.load(streams: [stream], on: connection)[stream] else {
            return (nil, nil)
        }
        let owners = try database { () throws(DatabaseError) in try connection.query(ChainOwnersTable.owner(of: otid)) }
        return (
            Chain.fold(loaded.events).latestTransactions.max { $0.purchaseDate < $1.purchaseDate },
            owners.isEmpty ? nil : owners[0, 0]
        )
    }

    /// The App Store Server API client of the app `bundleId` names; `asking` says what needs it
    /// (the 422 when the app has no serverAPI key).
    package func serverAPIClient(bundleId: String, asking: String) throws(ServiceError) -> AppStoreServerClient {
        guard let app = ledger.configuration.apps.first(where: { $0.bundleId == bundleId }),
            let serverAPI = app.serverAPI
        else {
            throw .serverAPINotConfigured(
                "app \(bundleId) has no serverAPI key: \(asking) asks Apple's App Store Server API")
        }
        return serverAPI.client(bundleId: app.bundleId)
    }
}
