import EventStore
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The projection tables' one owners against a real database: what ingest, catalog changes and
/// replays write is what reads find, and a successor table swaps in (twice: the renames leave
/// the names a next replay expects).
@Suite(.tags(.database)) struct ProjectionTablesTests {
    func connection() throws -> Connection { try Connection(try TestDatabase.shared.freshDatabase()) }

    @Test func documentsUpsertedOneOrSeveralAreReadBackWhileTrue() throws {
        let db = try connection()
        try db.execute(
            UserDocumentsTable.upsert(
                userId: "u-1", version: 3, document: #"{"v":1}"#, renderedAt: 100, validUntil: 200))
        try db.execute(
            UserDocumentsTable.upsert(
                ids: ["u-1", "u-'2"], versions: [4, 5], documents: [#"{"v":2}"#, "{}"], validUntils: [nil, 150],
                renderedAt: 120))
        let rows = try db.query(UserDocumentsTable.cached(userId: "u-1", now: 500))
        #expect(rows.count == 1 && rows[0, 0] == #"{"v":2}"# && rows[0, 1] == "120" && rows[0, 2] == nil)
        #expect(try db.query(UserDocumentsTable.cached(userId: "u-'2", now: 150)).count == 0)
        #expect(try db.query(UserDocumentsTable.cached(userId: "u-'2", now: 149)).count == 1)
        let live = try db.query(UserDocumentsTable.rows(of: ["u-1", "u-'2", "nobody"]))
        #expect(live.count == 2)
    }

    @Test func claimsRecordAndMoveOwners() throws {
        let db = try connection()
        try db.execute(
            ChainOwnersTable.upsert([("1000", "u-1")]).sql, ChainOwnersTable.upsert([("1000", "u-1")]).params)
        let many = ChainOwnersTable.upsert((0..<10).map { (otid: "20\($0)", user: "u-2") } + [("1000", "u-2")])
        try db.execute(many.sql, many.params)
        for ids in [["1000"], (0..<10).map { "20\($0)" }] {
            let statement = try #require(ChainOwnersTable.owners(of: ids))
            let owners = ChainOwnersTable.owners(from: try db.query(statement.sql, statement.params))
            #expect(owners == Dictionary(uniqueKeysWithValues: ids.map { ($0, "u-2") }))
        }
        #expect(ChainOwnersTable.owners(of: []) == nil)
        let chains = try db.query(ChainOwnersTable.chains(of: "u-2"))
        #expect((0..<chains.count).compactMap { chains[$0, 0] } == ["1000"] + (0..<10).map { "20\($0)" })
        #expect(try db.query(ChainOwnersTable.chains(of: "u-1")).count == 0)
    }

    @Test func aSuccessorLoadedByCopySwapsInAndAgain() throws {
        let db = try connection()
        for round in 1...2 {
            try db.executeScript(UserDocumentsTable.createNext + "\n" + ChainOwnersTable.createNext)
            var users: [UInt8] = []
            var owners: [UInt8] = []
            // Tabs, newlines and backslashes must survive COPY's text escaping.
            UserDocumentsTable.appendCopyRow(
                userId: "u\t\\\(round)", version: Int64(round), document: Array("{\"a\":\"x\\ny\"}\n".utf8),
                renderedAt: 7, validUntil: nil, into: &users)
            ChainOwnersTable.appendCopyRow(otid: "1000", userId: "u\t\\\(round)", claimedAt: 86_400_000, into: &owners)
            ChainOwnersTable.appendCopyRow(otid: "gone", userId: "u-x", claimedAt: 0, into: &owners)
            try db.copyIn(UserDocumentsTable.copyIntoNext, data: users)
            try db.copyIn(ChainOwnersTable.copyIntoNext, data: owners)
            try db.executeScript(UserDocumentsTable.indexNext + "\n" + ChainOwnersTable.indexNext)
            // A catch-up's writes land in the successor.
            try db.execute(
                UserDocumentsTable.upsert(
                    ids: ["late"], versions: [9], documents: ["{}"], validUntils: [nil], renderedAt: 8, into: .next))
            try db.execute(ChainOwnersTable.deleteNext(["gone"]))
            try db.execute(ChainOwnersTable.upsertNext(otids: ["3000"], owners: ["late"], claimedAt: [1_000]))
            try db.executeScript(UserDocumentsTable.swapNext + "\n" + ChainOwnersTable.swapNext)

            let live = try db.query("SELECT user_id, version, document FROM proj.users ORDER BY user_id")
            #expect(live.count == 2)
            #expect(live[0, 0] == "late" && live[1, 0] == "u\t\\\(round)" && live[1, 1] == "\(round)")
            #expect(live[1, 2] == "{\"a\":\"x\\ny\"}\n")
            let claimed = try db.query(
                "SELECT original_transaction_id, user_id, (extract(epoch FROM claimed_at) * 1000)::bigint AS ms"
                    + " FROM proj.chain_owners ORDER BY 1")
            #expect(claimed.count == 2)
            #expect(claimed[0, 0] == "1000" && claimed[0, 1] == "u\t\\\(round)" && claimed.int64(0, "ms") == 86_400_000)
            #expect(claimed[1, 0] == "3000" && claimed.int64(1, "ms") == 1_000)
        }
        let constraints = try db.query(
            """
            SELECT conrelid::regclass::text AS t, conname FROM pg_constraint
            WHERE connamespace = 'proj'::regnamespace AND contype = 'p' AND conname IN ('users_pkey', 'chain_owners_pkey')
            ORDER BY 1
            """)
        #expect(constraints.count == 2)
        #expect(constraints[0, "t"] == "proj.chain_owners" && constraints[1, "t"] == "proj.users")
    }
}
