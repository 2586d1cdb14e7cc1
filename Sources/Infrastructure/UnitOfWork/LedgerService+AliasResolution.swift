import EventStore
import Ledger

/// How the shell finds the user an id names: every use case acts on an alias's target.
extension LedgerService {
    /// `resolveUser(_:on:)` in a read of its own (what this process has seen first).
    package func resolveUser(_ userId: String) throws(ServiceError) -> String {
        if let target = knownAliases.target(of: userId) { return target }
        let resolved = try read { connection throws(ServiceError) in try resolveUser(userId, on: connection) }
        if resolved != userId { knownAliases.remember(alias: userId, target: resolved) }
        return resolved
    }

    /// The user an id names (api.md §7): its target when it is an alias, else itself. With
    /// `asOf` (ms), as it was then: an alias merged later still names itself.
    package func resolveUser(_ userId: String, asOf: Int64? = nil, on connection: Connection) throws(ServiceError)
        -> String
    {
        let rows = try database { () throws(DatabaseError) in
            try connection.query(UserAliasesTable.target(of: userId, asOf: asOf))
        }
        return rows.isEmpty ? userId : (rows[0, 0] ?? userId)
    }

    /// Locks the stream of the user `named` names and answers that user: the named id's stream
    /// first, then (when it is an alias) its target's. Holding the alias's lock, the answer
    /// cannot change (a merge takes both locks), so a write that waited on a merge acts on the
    /// target. The second lock is taken out of the sorted order: only a merge of this very pair
    /// could wait on it the other way round, and PostgreSQL breaks that deadlock (40P01), which
    /// the unit of work retries.
    package func lockResolvingAlias(_ named: String, with others: [String] = [], on connection: Connection)
        throws(ServiceError) -> String
    {
        try database { () throws(DatabaseError) in
            try repository.lock([LedgerStream.user(named)] + others, on: connection)
        }
        let userId = try resolveUser(named, on: connection)
        if userId != named {
            try database { () throws(DatabaseError) in
                try repository.lock([LedgerStream.user(userId)], on: connection)
            }
        }
        return userId
    }
}
