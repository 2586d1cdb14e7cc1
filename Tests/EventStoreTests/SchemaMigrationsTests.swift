import EventStore
import Schema
import TestSupport
import Testing

/// The binary's schema is `SchemaMigrations.all`, generated from `migrations/` by
/// scripts/embed-migrations. Adding or changing a file without regenerating fails here.
@Suite(.tags(.database)) struct SchemaMigrationsTests {
    @Test func theEmbeddedMigrationsAreTheFolderByteForByte() throws {
        let files = try TestDatabase.migrationFiles()
        #expect(!files.isEmpty)
        #expect(
            SchemaMigrations.all.map(\.name) == files.map(\.name),
            "migrations/ and Sources/Schema/SchemaMigrations.swift differ: run scripts/embed-migrations")
        for (embedded, file) in zip(SchemaMigrations.all, files) {
            // Bytes, not String equality (which holds for canonically equivalent Unicode).
            #expect(
                embedded.sql.utf8.elementsEqual(file.sql.utf8),
                "\(file.name) differs from its embedded copy: run scripts/embed-migrations")
            #expect(embedded.version == file.version)
        }
    }

    @Test func theEmbeddedMigrationsAreNumberedInOrderEachNumberOnce() {
        let versions = SchemaMigrations.all.map(\.version)
        #expect(versions == versions.sorted())
        #expect(Set(versions).count == versions.count)
        #expect(SchemaMigrations.all.first?.name == "0001_create_roles.sql")
    }
}
