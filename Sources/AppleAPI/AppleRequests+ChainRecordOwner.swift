import EventStore
import Infrastructure
import Ledger

extension AppleRequests {
    /// The owner of a chain whose lock the caller holds (nil: nobody claimed it), locked too, so
    /// an event appended to the chain can be followed by `restoreOwnerDocument`. Owners change
    /// only under the chain's lock; chain before user is the order every sorted lock takes.
    package func lockOwner(ofChain chainId: String, on connection: Connection) throws(ServiceError) -> String? {
        let owners = try database { () throws(DatabaseError) in
            try connection.query(ChainOwnersTable.owner(of: chainId))
        }
        guard !owners.isEmpty, let owner = owners[0, 0] else { return nil }
        try database { () throws(DatabaseError) in
            try ledger.repository.lock([LedgerStream.user(owner)], on: connection)
        }
        return owner
    }

    /// Stores the owner's document again after a record of Apple's requests (a retention
    /// request, a consumption answer, a renewal-date extension) was appended to one of its
    /// chains: it changes nothing the owner has, but the document's `version` counts every
    /// event of the owner's chains, as a replay renders it — without this the stored version
    /// lags and a dry-run replay reports the owner as changed.
    package func restoreOwnerDocument(_ owner: String?, after event: LedgerEvent, now: Int64, on connection: Connection)
        throws(ServiceError)
    {
        guard let owner else { return }
        _ = try UserDocumentWriter.storeAnnouncing(
            ledger.repository.loadUser(owner, on: connection), events: [event], documents: ledger.documents, now: now,
            on: connection)
    }
}
