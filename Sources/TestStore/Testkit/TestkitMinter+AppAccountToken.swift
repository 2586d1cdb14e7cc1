import JSON

/// Set App Account Token (API 1.16) as the test store's Apple plays it.
extension TestkitMinter {
    /// What Apple does once it accepted a token for a chain: "replaces the token for the current
    /// and later renewals, not past ones" (../shared/apple/FORMATS.md §8). So the chain's latest
    /// transaction (the current period, or the one purchase of a one-time product) and its
    /// renewal info carry the token from now on; a DID_RENEW copies the latest transaction, so
    /// every later period carries it too, and Get Transaction History (sync) answers it. Earlier
    /// periods keep the token they were bought with. Sends no notification: Apple sends none.
    static func setAppAccountToken(originalTransactionId chainId: String, token: String, state: inout TestkitState)
        throws(TestkitError)
    {
        guard let latest = state.chain(chainId).last else {
            throw TestkitError("no transaction with originalTransactionId \(chainId) was minted by this test store")
        }
        state.transactions[latest]["appAccountToken"] = .string(token.lowercased())
        state.renewals[chainId]?["appAccountToken"] = .string(token.lowercased())
    }
}
