/// One schema migration: `NNNN_name.sql` and its text. The service's own are compiled into the
/// binary (`SchemaMigrations.all`, generated from the repository's `migrations/`), so no command
/// reads a file to learn its schema.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}
