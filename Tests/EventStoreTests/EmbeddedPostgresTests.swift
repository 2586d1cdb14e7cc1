import EventStore
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite(.tags(.database)) struct EmbeddedPostgresTests {
    @Test func startThenStopLeavesNoServerRunning() throws {
        let top = try TestDatabase.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: top) }
        let directory = top + "/nested/data"  // parents are created
        // mkdtemp made `top` 0700 root: the postgres user cannot reach below it, and says so.
        if geteuid() == 0 {
            let unreachable = #expect(throws: EmbeddedPostgresError.self) {
                try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings)
            }
            #expect(unreachable?.kind == .dataDirectory)
            #expect(unreachable?.description.contains("not writable by the postgres OS user") == true)
        }
        chmod(top, 0o755)
        let messages = Mutex<[String]>([])
        let server = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings) { line in
            messages.withLock { $0.append(line) }
        }
        server.stopWhenProcessExits()
        let pid = server.postmasterPID
        #expect(EmbeddedPostgres.isAlive(pid))
        #expect(messages.withLock { $0 }.contains { $0.hasPrefix("creating PostgreSQL cluster") })
        let connection = try Connection(server.connectionString())
        #expect(try connection.query("SELECT current_database() AS d")[0, "d"] == "iap_ledger")
        #expect(try connection.query("SHOW synchronous_commit")[0, 0] == "on")
        #expect(try connection.query("SHOW listen_addresses")[0, 0] == "")

        server.stop()
        server.stop()  // idempotent
        #expect(!EmbeddedPostgres.isAlive(pid))
        #expect(!FileManager.default.fileExists(atPath: directory + "/pgdata/postmaster.pid"))

        // The second start reuses the cluster (no initdb) and keeps the data.
        messages.withLock { $0 = [] }
        let again = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings) { line in
            messages.withLock { $0.append(line) }
        }
        again.stopWhenProcessExits()
        #expect(!messages.withLock { $0 }.contains { $0.hasPrefix("creating") })
        again.stop()
        #expect(!EmbeddedPostgres.isAlive(again.postmasterPID))
    }

    @Test func recoversFromAKilledRun() throws {
        let directory = try TestDatabase.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A run whose process died without stopping its server: the next start stops it first.
        let orphan = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings)
        orphan.stopWhenProcessExits()
        let server = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings)
        server.stopWhenProcessExits()
        #expect(!EmbeddedPostgres.isAlive(orphan.postmasterPID))
        #expect(server.postmasterPID != orphan.postmasterPID)
        server.stop()

        // A stale postmaster.pid naming a process that is gone is removed.
        let pidFile = directory + "/pgdata/postmaster.pid"
        try "99999999\n\(directory)/pgdata\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
        let fresh = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings)
        fresh.stopWhenProcessExits()
        #expect(try Connection(fresh.connectionString()).query("SELECT 1 AS one")[0, "one"] == "1")
        fresh.stop()
        #expect(!EmbeddedPostgres.isAlive(fresh.postmasterPID))
    }

    @Test func movesTheSocketWhenTheDataDirectoryPathIsTooLongForIt() throws {
        let top = try TestDatabase.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: top) }
        chmod(top, 0o755)
        let directory = top + "/" + String(repeating: "d", count: 100)  // socket path would pass 107 bytes
        let server = try EmbeddedPostgres.start(dataDirectory: directory, settings: TestDatabase.settings)
        server.stopWhenProcessExits()
        defer { server.stop() }
        #expect(server.socketDirectory != directory)
        #expect((server.socketDirectory + "/.s.PGSQL.5432").utf8.count <= 107)
        #expect(try Connection(server.connectionString()).query("SELECT 1 AS one")[0, "one"] == "1")
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: server.socketDirectory))
    }

    @Test func refusesADataDirectoryThatCannotExist() throws {
        let file = try TestDatabase.makeTemporaryDirectory() + "/plain-file"
        defer { try? FileManager.default.removeItem(atPath: String(file.dropLast("/plain-file".count))) }
        try "x".write(toFile: file, atomically: true, encoding: .utf8)
        let error = #expect(throws: EmbeddedPostgresError.self) {
            try EmbeddedPostgres.start(dataDirectory: file + "/data")
        }
        #expect(error?.kind == .dataDirectory)
        #expect(error?.description.contains(file) == true)
        #expect(error?.description.contains("\n") == false)
    }

    @Test func reportsAFailedStartWithTheServerLog() throws {
        let directory = try TestDatabase.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let error = #expect(throws: EmbeddedPostgresError.self) {
            try EmbeddedPostgres.start(dataDirectory: directory, settings: ["shared_buffers": "not-a-size"])
        }
        #expect(error?.kind == .start)
        #expect(error?.description.contains("shared_buffers") == true)
        #expect(error?.description.contains("\n") == false)
    }
}
