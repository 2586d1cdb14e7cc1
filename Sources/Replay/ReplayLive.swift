import EventStore
import Infrastructure

/// The live `proj.users` and `proj.chain_owners`, read whole to judge the rebuilt documents
/// against (on a connection of its own, so the server sends them while the replay's own
/// connection loads rows).
package struct ReplayLive: Sendable {
    package struct Row: Sendable {
        package var version: Int64
        package var renderedAt: Int64
        package var document: [UInt8]
    }

    package var users: [String: Row] = [:]
    package var owners: [String: String] = [:]

    /// The second connection of a replay (same role and settings as its first).
    package static func connect(conninfo: String, session: SessionSettings) throws(ServiceError) -> Connection {
        try database { () throws(DatabaseError) in try Connection(conninfo, connectTimeout: 10, session: session) }
    }

    package static func load(on connection: Connection) throws(ServiceError) -> ReplayLive {
        try database { () throws(DatabaseError) in
            var live = ReplayLive()
            let users = try connection.copyOut(UserDocumentsTable.copyOut)
            live.users.reserveCapacity(users.count / 512)
            CopyText.forEachRow(users) { buffer, fields in
                guard fields.count == 4 else { return }
                live.users[CopyText.string(buffer, fields[0])] = Row(
                    version: CopyText.integer(buffer, fields[1]), renderedAt: CopyText.integer(buffer, fields[2]),
                    document: CopyText.field(buffer, fields[3]))
            }
            let owners = try connection.copyOut(ChainOwnersTable.copyOut)
            live.owners.reserveCapacity(owners.count / 24)
            CopyText.forEachRow(owners) { buffer, fields in
                guard fields.count == 2 else { return }
                live.owners[CopyText.string(buffer, fields[0])] = CopyText.string(buffer, fields[1])
            }
            return live
        }
    }
}
