import Arguments
import EventStore
import Foundation
import Identity
import Infrastructure
import Schema

/// `iap-ledger migrate`: applies pending migrations to the database `serve` would use, then the
/// one-time log migration (`LogMigration`) when the log still holds rows from before subjects,
/// and exits.
package enum MigrateCommand {
    package static func run(_ arguments: [String]) throws -> Int32 {
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
            var lines = applied.map { "applied \($0)" }
            // Then the log migration, once: the rows written before subjects stored as new ones are.
            if let sealed = try LogMigration.run(on: connection), sealed != LogMigration.Outcome() {
                lines.append(
                    "sealed the log: \(sealed.events) events and \(sealed.changes) changes stored again; "
                        + "\(sealed.users) users and \(sealed.tokens) tokens given subjects")
            }
            print(lines.isEmpty ? "nothing to apply" : lines.joined(separator: "\n"))
        }
        return 0
    }
}
