import EventStore
import Glibc
import TestSupport
import Testing

@Suite(.tags(.database)) struct ConnectionTests {
    @Test func bindsTextParametersAndNulls() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        let rows = try connection.query(
            "SELECT $1::text AS a, $2::int8 + 1 AS b, $3::text AS c", ["it's \"x\"", "41", nil])
        #expect(rows.count == 1)
        #expect(rows[0, "a"] == "it's \"x\"")
        #expect(rows.int64(0, "b") == 42)
        #expect(rows[0, "c"] == nil)
        #expect(rows[0, 1] == "42")
        // The same SQL again runs the cached prepared statement.
        #expect(
            try connection.query("SELECT $1::text AS a, $2::int8 + 1 AS b, $3::text AS c", ["y", "1", "z"])[0, "b"]
                == "2")
    }

    /// A generic plan made while the table was tiny (a sequential scan) is not kept for ever:
    /// the statements are prepared again once the refresh wait (first 5 s) has passed.
    @Test func preparedStatementsArePlannedAgainAfterTheRefreshWait() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        try connection.executeScript(
            "CREATE TABLE t (k text PRIMARY KEY); INSERT INTO t SELECT i::text FROM generate_series(1, 20) i; ANALYZE t"
        )
        let probe = "SELECT k FROM t WHERE k = ANY($1::text[])"
        let statements = "SELECT name, generic_plans FROM pg_prepared_statements WHERE statement = $1"
        for _ in 0..<7 { #expect(try connection.query(probe, ["{1,2}"]).count == 2) }
        let before = try connection.query(statements, [probe])
        #expect(before.count == 1)
        #expect((before.int64(0, "generic_plans") ?? 0) >= 1, "PostgreSQL settled on a generic plan")
        try connection.executeScript("INSERT INTO t SELECT i::text FROM generate_series(21, 50000) i")
        // Asked again until the statement is prepared anew (once the refresh is due). The refresh
        // may come due at the look into pg_prepared_statements itself: that look then finds no
        // probe at all (everything was deallocated), and the next probe prepares it anew.
        var after = before
        try eventually("the probe prepared anew", within: 30, every: 0.25) {
            #expect(try connection.query(probe, ["{1,2}"]).count == 2)
            after = try connection.query(statements, [probe])
            return after.count == 1 && after[0, "name"] != before[0, "name"]
        }
        #expect(after.int64(0, "generic_plans") == 0, "planned anew")
    }

    @Test func reportsSQLStateAndMessage() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        try connection.executeScript("CREATE TABLE t (id int PRIMARY KEY)")
        try connection.execute("INSERT INTO t VALUES ($1)", ["1"])
        let error = #expect(throws: DatabaseError.self) { try connection.execute("INSERT INTO t VALUES ($1)", ["1"]) }
        #expect(error?.sqlState == "23505")
        #expect(error?.isUniqueViolation == true)
        #expect(error?.constraint == "t_pkey")
        #expect(error?.isRetryable == false)
        let syntax = #expect(throws: DatabaseError.self) { try connection.query("SELEC 1") }
        #expect(syntax?.sqlState == "42601")
        #expect(syntax?.message.contains("syntax error") == true)
        // The connection is still usable.
        #expect(try connection.query("SELECT 1 AS one")[0, "one"] == "1")
    }

    @Test func transactionCommitsOrRollsBack() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        try connection.executeScript("CREATE TABLE t (id int)")
        try connection.transaction { try $0.execute("INSERT INTO t VALUES (1)") }
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO t VALUES (2)")
                throw Boom()
            }
        }
        // A swallowed SQL error inside the body must not be reported as a commit.
        let aborted = #expect(throws: DatabaseError.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO t VALUES (3)")
                _ = try? connection.query("SELECT 1/0")
            }
        }
        #expect(aborted?.sqlState == "25P02")
        #expect(try connection.query("SELECT count(*) AS n FROM t").int64(0, "n") == 1)
    }

    @Test func copiesOutAndIn() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        try connection.executeScript("CREATE TABLE src (id int, name text); CREATE TABLE dst (id int, name text)")
        try connection.execute("INSERT INTO src SELECT g, 'n' || g FROM generate_series(1, 5000) g")
        let data = try connection.copyOut("COPY src TO STDOUT")
        #expect(data.count > 5000)
        try connection.copyIn("COPY dst FROM STDIN", data: data)
        #expect(try connection.query("SELECT count(*) AS n FROM dst WHERE name = 'n' || id").int64(0, "n") == 5000)
        let bad = #expect(throws: DatabaseError.self) {
            try connection.copyIn("COPY dst FROM STDIN", data: json("x\ty\n"))
        }
        #expect(bad?.sqlState == "22P02")
        #expect(try connection.query("SELECT 1 AS one")[0, "one"] == "1")
    }

    @Test func pipelinesBatchesInOrder() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        let statements = (1...1000).map { Connection.Statement("SELECT $1::int * 2 AS v", [String($0)]) }
        let results = try connection.pipeline(statements, chunkSize: 300)
        #expect(results.count == 1000)
        #expect(results.map { $0.int64(0, "v")! } == (1...1000).map { Int64($0) * 2 })
        let failing = #expect(throws: DatabaseError.self) {
            try connection.pipeline([.init("SELECT 1"), .init("SELECT 1/0"), .init("SELECT 3")])
        }
        #expect(failing?.sqlState == "22012")
        #expect(try connection.query("SELECT 5 AS v")[0, "v"] == "5")
    }

    @Test func connectsWithAURLToo() throws {
        let server = try TestDatabase.shared.server()
        let url = "postgresql:///iap_ledger?host=\(server.socketDirectory)&port=5432&user=postgres"
        #expect(try Connection(url).query("SELECT current_database() AS d")[0, "d"] == "iap_ledger")
    }

    @Test func refusesAnUnreachableServerWithARetryableError() throws {
        let error = #expect(throws: DatabaseError.self) {
            try Connection("host=/nonexistent-socket-dir port=5432 dbname=x", connectTimeout: 1)
        }
        #expect(error?.sqlState == "08001")
        #expect(error?.isRetryable == true)
    }
}
