import EventStore
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite(.tags(.database)) struct ConnectionPoolTests {
    @Test func lendsConnectionsWithTheirSessionSettingsAndCleansUp() throws {
        let pool = ConnectionPool(
            conninfo: try TestDatabase.shared.freshDatabase(), size: 2,
            session: SessionSettings(role: "iap_ledger_service"))
        #expect(try pool.withConnection { try $0.query("SELECT current_user AS u")[0, "u"] } == "iap_ledger_service")
        // A transaction left open by the body is rolled back before the connection is reused.
        try pool.withConnection { try $0.executeScript("BEGIN; CREATE TEMP TABLE leftover (id int)") }
        try pool.withConnection { try $0.executeScript("BEGIN; CREATE TEMP TABLE leftover (id int); ROLLBACK") }
        #expect(pool.ping())
        try pool.withTransaction { try $0.executeScript("CREATE TABLE proj.kept (id int)") }
        #expect(try pool.withConnection { try $0.query("SELECT to_regclass('proj.kept') AS t")[0, "t"] } == "proj.kept")
        let stats = pool.stats
        #expect(stats.size == 2 && stats.inUse == 0 && stats.open == 1 && stats.connects == 1)
    }

    @Test func callersWaitForAFreeConnection() throws {
        let pool = ConnectionPool(conninfo: try TestDatabase.shared.freshDatabase(), size: 2)
        let maxInUse = Mutex(0)
        // The first two borrowers keep their connections until the test has seen the six other
        // callers waiting for one; then every round goes through.
        let contended = Gate()
        defer { contended.open() }
        let done = Gate()
        Thread {
            onThreads(8) { _ in
                for _ in 0..<20 {
                    try? pool.withConnection { connection in
                        maxInUse.withLock { $0 = max($0, pool.stats.inUse) }
                        _ = try connection.query("SELECT 1")
                        contended.wait(within: 20)
                    }
                }
            }
            done.open()
        }.start()
        try eventually("two connections lent and six callers waiting", within: 20, every: 0.01) {
            let stats = pool.stats
            return stats.inUse == 2 && stats.waits == 6
        }
        contended.open()
        #expect(done.wait(within: 60), "the callers did not finish")
        let stats = pool.stats
        #expect(maxInUse.withLock { $0 } <= 2)
        #expect(stats.inUse == 0)
        #expect(stats.waits >= 6)
        #expect(stats.connects == 2)
    }

    @Test func timesOutWithARetryableErrorWhenExhausted() throws {
        let pool = ConnectionPool(
            conninfo: try TestDatabase.shared.freshDatabase(), size: 1, acquireTimeout: .milliseconds(100))
        let error = try pool.withConnection { _ in
            #expect(throws: DatabaseError.self) { try pool.withConnection { _ in } }
        }
        #expect(error?.sqlState == "53300")
        #expect(error?.isRetryable == true)
    }

    @Test func recoversAfterPostgreSQLRestarts() throws {
        // Its own cluster: stopping the shared one would break every other suite.
        let directory = try TestDatabase.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var server = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings)
        server.stopWhenProcessExits()
        defer { server.stop() }
        let pool = ConnectionPool(conninfo: server.connectionString(), size: 2, connectTimeout: 2)
        #expect(try pool.withConnection { try $0.query("SELECT 1 AS one")[0, "one"] } == "1")

        server.stop()
        #expect(!pool.ping(timeout: 1))
        let down = #expect(throws: DatabaseError.self) { try pool.withConnection { try $0.query("SELECT 1") } }
        #expect(down?.isConnectionFailure == true)
        #expect(down?.isRetryable == true)
        #expect(pool.stats.open == 0)

        server = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings)
        server.stopWhenProcessExits()
        #expect(pool.ping())
        #expect(try pool.withConnection { try $0.query("SELECT 2 AS two")[0, "two"] } == "2")

        // A connection that was idle in the pool while the server restarted is noticed before use.
        // Two callers each hold one until both are in: the pool has two open.
        let pids = Mutex<Set<String>>([])
        let bothIn = DispatchGroup()
        for _ in 0..<2 { bothIn.enter() }
        onThreads(2) { _ in
            _ = try? pool.withConnection { connection in
                let pid = try connection.query("SELECT pg_backend_pid() AS p")[0, "p"]!
                pids.withLock { _ = $0.insert(pid) }
                bothIn.leave()
                _ = bothIn.wait(timeout: .now() + 20)
            }
        }
        #expect(pids.withLock { $0.count } == 2, "two connections at once")
        #expect(pool.stats.open == 2)
        server.stop()
        server = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings)
        server.stopWhenProcessExits()
        for _ in 0..<4 {
            #expect(try pool.withConnection { try $0.query("SELECT 3 AS three")[0, "three"] } == "3")
        }
        #expect(pool.stats.discards >= 2)
    }

    @Test func aConnectionKilledMidSessionFailsOnceThenIsReplaced() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let pool = ConnectionPool(conninfo: conninfo, size: 1)
        let pid = try pool.withConnection { try $0.query("SELECT pg_backend_pid() AS p")[0, "p"]! }
        let admin = try Connection(conninfo)
        let error = try pool.withConnection { connection in
            _ = try admin.query("SELECT pg_terminate_backend($1::int)", [pid])
            return #expect(throws: DatabaseError.self) { try connection.query("SELECT 1") }
        }
        #expect(error?.isConnectionFailure == true)
        let newPid = try pool.withConnection { try $0.query("SELECT pg_backend_pid() AS p")[0, "p"]! }
        #expect(newPid != pid)
    }
}
