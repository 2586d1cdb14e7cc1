import EventStore
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite struct MigratorTests {
    private func migrationFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: TestDatabase.migrationsDirectory)
            .filter { $0.hasSuffix(".sql") }.sorted()
    }

    @Test func appliesEachMigrationOnceInOrder() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        let applied = try Migrator.migrate(connection: connection, directory: TestDatabase.migrationsDirectory)
        #expect(applied == (try migrationFiles()))
        #expect(applied.first == "0001_create_roles.sql")
        #expect(try Migrator.migrate(connection: connection, directory: TestDatabase.migrationsDirectory) == [])
        let rows = try connection.query("SELECT version, name FROM public.schema_migrations ORDER BY version")
        #expect((0..<rows.count).map { rows[$0, "name"]! } == applied)
    }

    @Test func aBrokenMigrationNamesItsFileAndIsNotRecorded() throws {
        let directory = try TestDatabase.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for file in try migrationFiles() {
            try FileManager.default.copyItem(
                atPath: TestDatabase.migrationsDirectory + "/" + file, toPath: directory + "/" + file)
        }
        try "CREATE TABLE public.half_done (id int);\nSELECT 1 / 0;\n"
            .write(toFile: directory + "/0099_break_things.sql", atomically: true, encoding: .utf8)
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))

        let error = #expect(throws: MigrationError.self) {
            try Migrator.migrate(connection: connection, directory: directory)
        }
        #expect(error?.file == "0099_break_things.sql")
        #expect(error?.message == "division by zero")
        #expect(error?.description == "migration 0099_break_things.sql failed: division by zero")
        #expect(error?.databaseError?.sqlState == "22012")
        // Earlier files were applied and recorded; the broken one left nothing behind.
        let versions = try connection.query("SELECT max(version) AS v, count(*) AS n FROM public.schema_migrations")
        #expect(versions.int64(0, "n") == Int64(try migrationFiles().count))
        #expect(try connection.query("SELECT to_regclass('public.half_done') AS t")[0, "t"] == nil)

        // Fixed, it applies on the next run.
        try "CREATE TABLE public.half_done (id int);\n"
            .write(toFile: directory + "/0099_break_things.sql", atomically: true, encoding: .utf8)
        #expect(try Migrator.migrate(connection: connection, directory: directory) == ["0099_break_things.sql"])
    }

    @Test func twoProcessesMigratingAtOnceDoNotCollide() throws {
        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let results = Mutex<[Result<[String], MigrationError>]>([])
        onThreads(4) { _ in
            let result: Result<[String], MigrationError>
            do {
                let connection = try Connection(conninfo)
                result = .success(
                    try Migrator.migrate(connection: connection, directory: TestDatabase.migrationsDirectory))
            } catch let error as MigrationError {
                result = .failure(error)
            } catch {
                result = .failure(MigrationError(file: nil, message: "\(error)", databaseError: nil))
            }
            results.withLock { $0.append(result) }
        }
        let applied = try results.withLock { results in try results.map { try $0.get() } }
        #expect(applied.flatMap { $0 }.sorted() == (try migrationFiles()))
    }

    @Test func refusesMisnamedAndDuplicateFiles() throws {
        let directory = try TestDatabase.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "SELECT 1;".write(toFile: directory + "/0001_a.sql", atomically: true, encoding: .utf8)
        try "SELECT 1;".write(toFile: directory + "/0001_b.sql", atomically: true, encoding: .utf8)
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        let duplicate = #expect(throws: MigrationError.self) {
            try Migrator.migrate(connection: connection, directory: directory)
        }
        #expect(duplicate?.message.contains("also used by") == true)
        try FileManager.default.removeItem(atPath: directory + "/0001_b.sql")
        try "SELECT 1;".write(toFile: directory + "/2_bad.sql", atomically: true, encoding: .utf8)
        let misnamed = #expect(throws: MigrationError.self) {
            try Migrator.migrate(connection: connection, directory: directory)
        }
        #expect(misnamed?.file == "2_bad.sql")
    }
}
