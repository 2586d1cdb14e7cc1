import EventStore
import Foundation
import Schema
import Synchronization
import TestSupport
import Testing

@Suite(.tags(.database)) struct MigratorTests {
    private func migrationFiles() -> [String] { SchemaMigrations.all.map(\.name) }

    @Test func appliesEachMigrationOnceInOrder() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        let applied = try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all)
        #expect(applied == migrationFiles())
        #expect(applied.first == "0001_create_roles.sql")
        #expect(try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all) == [])
        let rows = try connection.query("SELECT version, name FROM public.schema_migrations ORDER BY version")
        #expect((0..<rows.count).map { rows[$0, "name"]! } == applied)
    }

    @Test func aBrokenMigrationNamesItsFileAndIsNotRecorded() throws {
        let broken = Migration(
            version: 99, name: "0099_break_things.sql", sql: "CREATE TABLE public.half_done (id int);\nSELECT 1 / 0;\n")
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))

        let error = #expect(throws: MigrationError.self) {
            try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all + [broken])
        }
        #expect(error?.file == "0099_break_things.sql")
        #expect(error?.message == "division by zero")
        #expect(error?.description == "migration 0099_break_things.sql failed: division by zero")
        #expect(error?.databaseError?.sqlState == "22012")
        // Earlier files were applied and recorded; the broken one left nothing behind.
        let versions = try connection.query("SELECT max(version) AS v, count(*) AS n FROM public.schema_migrations")
        #expect(versions.int64(0, "n") == Int64(migrationFiles().count))
        #expect(try connection.query("SELECT to_regclass('public.half_done') AS t")[0, "t"] == nil)

        // Fixed, it applies on the next run.
        let fixed = Migration(
            version: 99, name: "0099_break_things.sql", sql: "CREATE TABLE public.half_done (id int);\n")
        #expect(
            try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all + [fixed]) == [fixed.name])
    }

    @Test func twoProcessesMigratingAtOnceDoNotCollide() throws {
        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let results = Mutex<[Result<[String], MigrationError>]>([])
        onThreads(4) { _ in
            let result: Result<[String], MigrationError>
            do {
                let connection = try Connection(conninfo)
                result = .success(
                    try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all))
            } catch let error as MigrationError {
                result = .failure(error)
            } catch {
                result = .failure(MigrationError(file: nil, message: "\(error)", databaseError: nil))
            }
            results.withLock { $0.append(result) }
        }
        let applied = try results.withLock { results in try results.map { try $0.get() } }
        #expect(applied.flatMap { $0 }.sorted() == migrationFiles())
    }

    @Test func duplicateNumbersAndBadNamesAreRefusedBeforeAnythingRuns() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        let a = Migration(version: 1, name: "0001_a.sql", sql: "SELECT 1;")
        let duplicate = #expect(throws: MigrationError.self) {
            try Migrator.migrate(
                connection: connection, migrations: [a, Migration(version: 1, name: "0001_b.sql", sql: "SELECT 1;")])
        }
        #expect(duplicate?.file == "0001_b.sql")
        #expect(duplicate?.message.contains("also used by 0001_a.sql") == true)
        let misnamed = #expect(throws: MigrationError.self) {
            try Migrator.migrate(
                connection: connection, migrations: [a, Migration(version: 2, name: "2_bad.sql", sql: "SELECT 1;")])
        }
        #expect(misnamed?.file == "2_bad.sql")
        let unordered = #expect(throws: MigrationError.self) {
            try Migrator.migrate(
                connection: connection, migrations: [Migration(version: 2, name: "0002_b.sql", sql: "SELECT 1;"), a])
        }
        #expect(unordered?.file == "0001_a.sql")
        // Refused before anything ran: not even the bookkeeping table exists.
        #expect(try connection.query("SELECT to_regclass('public.schema_migrations') AS t")[0, "t"] == nil)
    }
}
