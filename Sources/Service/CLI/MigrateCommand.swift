import Arguments
import EventStore
import Foundation
import Schema

/// `iap-ledger migrate`: applies pending migrations to the database `serve` would use, and exits.
enum MigrateCommand {
    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["data-dir"], switches: [])
        if parsed.wantsHelp {
            print(
                "usage: iap-ledger migrate [--data-dir DIR]   (DATABASE_URL selects an external server; never creates a cluster)"
            )
            return 0
        }
        try CommandLineInterface.withAdminConnection(dataDirectory: parsed.options["data-dir"]) { conninfo in
            let connection = try CommandLineInterface.adminConnection(conninfo)
            let applied = try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all)
            print(applied.isEmpty ? "nothing to apply" : applied.map { "applied \($0)" }.joined(separator: "\n"))
        }
        return 0
    }
}
