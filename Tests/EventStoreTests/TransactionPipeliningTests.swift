import EventStore
import TestSupport
import Testing

/// `Connection.transaction` sends BEGIN with the body's first statement, and `commit(after:)`
/// sends the last statements with COMMIT: fewer round trips, the same all-or-nothing outcome.
@Suite(.tags(.database)) struct TransactionPipeliningTests {
    private func connections() throws -> (Connection, Connection) {
        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let connection = try Connection(conninfo)
        try connection.executeScript("CREATE TABLE t (id int PRIMARY KEY, note text)")
        return (connection, try Connection(conninfo))
    }

    private func count(_ connection: Connection) throws -> Int64 {
        try connection.query("SELECT count(*) AS n FROM t").int64(0, "n")!
    }

    @Test func theFirstStatementRunsInsideTheTransaction() throws {
        let (connection, other) = try connections()
        try connection.transaction { connection in
            // The deferred BEGIN went out with this statement: it is already in a transaction block.
            #expect(
                try connection.query("SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid").bool(0, "noxid")
                    == true)
            try connection.execute("INSERT INTO t VALUES (1, 'a')")
            #expect(try count(other) == 0)  // not committed yet
            // now() is the transaction's start, so it differs from a later statement's timestamp.
            let later = try connection.query("SELECT now() < statement_timestamp() AS inside")
            #expect(later.bool(0, "inside") == true)
        }
        #expect(try count(other) == 1)
    }

    @Test func aFailingFirstStatementRollsBackAndLeavesTheConnectionUsable() throws {
        let (connection, _) = try connections()
        let error = #expect(throws: DatabaseError.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO t VALUES (1, 'a'), (1, 'b')")
            }
        }
        #expect(error?.sqlState == "23505")
        #expect(try count(connection) == 0)
        try connection.transaction { try $0.execute("INSERT INTO t VALUES (2, 'c')") }
        #expect(try count(connection) == 1)
    }

    @Test func aScriptOrACopyAsTheFirstStatementIsInsideTheTransactionToo() throws {
        let (connection, other) = try connections()
        #expect(throws: DatabaseError.self) {
            try connection.transaction { connection in
                try connection.executeScript("INSERT INTO t VALUES (1, 'a')")
                try connection.execute("INSERT INTO t VALUES (1, 'again')")
            }
        }
        #expect(try count(other) == 0)
        #expect(throws: DatabaseError.self) {
            try connection.transaction { connection in
                try connection.copyIn("COPY t FROM STDIN", data: Array("5\tcopied\n".utf8))
                try connection.execute("INSERT INTO t VALUES (5, 'again')")
            }
        }
        #expect(try count(other) == 0)
    }

    @Test func commitAfterSendsTheLastStatementsAndCommits() throws {
        let (connection, other) = try connections()
        let answers = try connection.transaction { connection in
            try connection.execute("INSERT INTO t VALUES (1, 'a')")
            return try connection.commit(after: [
                .init("INSERT INTO t VALUES ($1::int, 'b')", ["2"]),
                .init("SELECT count(*) AS n FROM t"),
            ])
        }
        #expect(answers.count == 2)
        #expect(answers[1].int64(0, "n") == 2)
        #expect(try count(other) == 2)
        // The connection is idle again: a new transaction may start.
        try connection.transaction { try $0.execute("INSERT INTO t VALUES (3, 'c')") }
        #expect(try count(other) == 3)
    }

    @Test func commitAfterAsTheOnlyCallOpensAndCommitsTheTransaction() throws {
        let (connection, other) = try connections()
        try connection.transaction { connection in
            _ = try connection.commit(after: [
                .init("INSERT INTO t VALUES (1, 'a')"), .init("INSERT INTO t VALUES (2, 'b')"),
            ])
        }
        #expect(try count(other) == 2)
    }

    @Test func aFailureInCommitAfterRollsBackEverythingOfTheTransaction() throws {
        let (connection, other) = try connections()
        let error = #expect(throws: DatabaseError.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO t VALUES (1, 'a')")
                _ = try connection.commit(after: [
                    .init("INSERT INTO t VALUES (2, 'b')"), .init("INSERT INTO t VALUES (1, 'dup')"),
                    .init("INSERT INTO t VALUES (3, 'c')"),
                ])
            }
        }
        #expect(error?.sqlState == "23505")
        #expect(try count(other) == 0)
        #expect(try count(connection) == 0)
    }

    @Test func anAbortedTransactionIsNeverReportedCommitted() throws {
        let (connection, other) = try connections()
        let error = #expect(throws: DatabaseError.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO t VALUES (1, 'a')")
                _ = try? connection.execute("SELECT 1/0")  // swallowed: the transaction is aborted
                _ = try connection.commit(after: [])
            }
        }
        #expect(error?.sqlState == "25P02")
        #expect(try count(other) == 0)
    }
}
