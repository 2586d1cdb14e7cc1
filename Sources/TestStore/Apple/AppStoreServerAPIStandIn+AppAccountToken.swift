import AppStore
import Foundation
import JSON

extension AppStoreServerAPIStandIn {
    /// The token Set App Account Token last set on a chain (nil: never).
    public func appAccountToken(of originalTransactionId: String) -> String? {
        state.withLock { $0.appAccountTokens[originalTransactionId] }
    }

    /// Set App Account Token, with the refusals Apple documents: a body without a UUID
    /// (4000183), an id that is a transaction's but not a chain's original (4000187), a Family
    /// Sharing purchase (4000185), an unknown id (4040010). 200 with no body otherwise.
    func setAppAccountToken(_ originalTransactionId: String, _ body: [UInt8]) -> Answer {
        guard let json = try? JSONValue.parse(body), let token = json["appAccountToken"]?.stringValue,
            UUID(uuidString: token) != nil
        else { return Self.error(400, 4_000_183, "Invalid app account token UUID.") }
        let found = state.withLock { state in
            state.transactions.first { $0.transactionId == originalTransactionId }
        }
        guard let found else { return Self.notFound }
        guard found.originalTransactionId == originalTransactionId else {
            return Self.error(400, 4_000_187, "Transaction id is not original transaction id.")
        }
        guard found.payload["inAppOwnershipType"]?.stringValue != "FAMILY_SHARED" else {
            return Self.error(400, 4_000_185, "Family transaction not supported.")
        }
        state.withLock { $0.appAccountTokens[originalTransactionId] = token.lowercased() }
        return Answer(status: 200, headers: [:], body: [], hang: false)
    }
}
