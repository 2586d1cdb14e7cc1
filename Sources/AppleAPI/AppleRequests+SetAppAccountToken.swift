import AppStore
import EventStore
import Identity
import Infrastructure
import Ledger

extension AppleRequests {
    /// What `PUT /v1/subscriptions/{originalTransactionId}/app-account-token` came to.
    package struct SetAppAccountTokenOutcome: Sendable {
        package var owner: String
        package var appAccountToken: String
        /// The environment Apple set it in.
        package var environment: String
    }

    /// `PUT /v1/subscriptions/{originalTransactionId}/app-account-token` (admin, api.md §8): Apple's
    /// Set App Account Token for a recorded chain (in its environment, with its app's key), then
    /// the token registered for the chain's owner (api.md §7, an AppAccountTokenRegistered event),
    /// so Apple's later facts carrying it are theirs. Refused before Apple is asked when nobody
    /// owns the chain (there is no one to register it for) or the token is another user's.
    package func setAppAccountToken(originalTransactionId otid: String, token: String, context: RequestContext)
        throws(ServiceError) -> SetAppAccountTokenOutcome
    {
        try ledger.projectionVersions.requireCurrent()
        let (latest, owner, holder) = try ledger.read {
            connection throws(ServiceError) -> (Transaction?, String?, String?) in
            let chain = try recordedChain(otid, on: connection)
            let holders = try database { () throws(DatabaseError) in
                try connection.query(AppAccountTokensTable.owner(of: token))
            }
            return (chain.latest, chain.owner, holders.isEmpty ? nil : holders[0, 0])
        }
        guard let latest else { throw .notFound("no transaction chain \(otid) has been recorded") }
        guard let owner else {
            throw .conflict("nobody owns \(otid) yet: claim it first (POST /v1/purchases or sync), then set its token")
        }
        if let holder, holder != owner { throw .rejected(.appAccountTokenTaken(owner: holder)) }
        let client = try serverAPIClient(bundleId: latest.bundleId, asking: "setting a token")
        let environment: AppStoreServerEnvironment
        do throws(AppStoreServerError) {
            environment = try client.setAppAccountToken(
                otid, appAccountToken: token, environment: AppStoreServerEnvironment(rawValue: latest.environment))
        } catch {
            throw .appStoreServer(error)
        }
        // Apple took it: registered for the owner (a repeat records nothing new).
        let registered = try ledger.run(RegisterAppAccountToken(userId: owner, register: token), context: context)
        return SetAppAccountTokenOutcome(
            owner: registered.userId, appAccountToken: token, environment: environment.rawValue)
    }
}
