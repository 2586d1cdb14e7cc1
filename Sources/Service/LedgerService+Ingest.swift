import EventStore
import Ledger

/// The `proj.chain_owners` reads and writes of ingest (the planner in `Ingest/` decides them).
extension LedgerService {
    /// Current owners of the given chains (from the inline projection, read under the chains' locks).
    func chainOwners(_ chainIds: [String], on connection: Connection) throws(ServiceError) -> [String: String] {
        guard let statement = chainOwnersStatement(chainIds) else { return [:] }
        return chainOwners(from: try database { () throws(DatabaseError) in
            try connection.query(statement.sql, statement.params)
        })
    }

    func chainOwnersStatement(_ chainIds: [String]) -> Connection.Statement? {
        guard !chainIds.isEmpty else { return nil }
        let (condition, parameters) = PostgresArray.membership("original_transaction_id", chainIds, firstParameter: 1)
        return Connection.Statement(
            "SELECT original_transaction_id, user_id FROM proj.chain_owners WHERE \(condition)", parameters)
    }

    func chainOwners(from rows: Rows) -> [String: String] {
        var owners: [String: String] = [:]
        for row in 0..<rows.count {
            if let otid = rows[row, 0], let user = rows[row, 1] { owners[otid] = user }
        }
        return owners
    }

    /// Records who claimed which chain in the inline projection (a plain VALUES row for one
    /// claim, whose plan is cached; unnest over bound arrays is planned on every execution).
    func chainOwnersUpsert(_ claimed: [(otid: String, user: String)]) -> Connection.Statement {
        let onConflict = "ON CONFLICT (original_transaction_id) DO UPDATE SET user_id = excluded.user_id, claimed_at = now()"
        if claimed.count == 1 {
            return Connection.Statement(
                "INSERT INTO proj.chain_owners (original_transaction_id, user_id) VALUES ($1, $2) \(onConflict)",
                [claimed[0].otid, claimed[0].user])
        }
        return Connection.Statement(
            """
            INSERT INTO proj.chain_owners (original_transaction_id, user_id)
            SELECT * FROM unnest($1::text[], $2::text[])
            \(onConflict)
            """, [PostgresArray.literal(claimed.map(\.otid)), PostgresArray.literal(claimed.map(\.user))])
    }
}
