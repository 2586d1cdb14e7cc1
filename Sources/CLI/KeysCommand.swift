import Arguments
import EventStore
import Foundation
import Infrastructure
import Schema

/// `iap-ledger keys create|list|revoke`: the API keys, on the database `serve` would use.
package enum KeysCommand {
    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["name", "scopes", "data-dir"], switches: [])
        let keyUsage = """
            usage: iap-ledger keys create --name NAME --scopes read,write,admin [--data-dir DIR]
                   iap-ledger keys list [--data-dir DIR]
                   iap-ledger keys revoke NAME [--data-dir DIR]
              the database is found as serve finds it (DATABASE_URL, else --data-dir, default ./.iap-ledger)
            """
        if parsed.wantsHelp {
            print(keyUsage)
            return 0
        }
        guard let subcommand = parsed.positionals.first else {
            CommandLineInterface.printError(keyUsage)
            return 2
        }
        guard ["create", "list", "revoke"].contains(subcommand) else {
            throw CommandLineArguments.UsageError(description: "unknown keys subcommand \"\(subcommand)\"")
        }
        // Check the arguments before starting a cluster for nothing.
        var scopes: [String] = []
        switch subcommand {
        case "create":
            guard let scopeText = parsed.options["scopes"], parsed.options["name"] != nil else {
                throw CommandLineArguments.UsageError(description: "keys create needs --name and --scopes")
            }
            do {
                scopes = try APIKeys.parseScopes(scopeText)
            } catch {
                throw CommandLineArguments.UsageError(description: error.description)
            }
        case "revoke":
            guard parsed.positionals.count == 2 else {
                throw CommandLineArguments.UsageError(description: "keys revoke needs the key's name")
            }
        default:
            guard parsed.positionals.count == 1 else {
                throw CommandLineArguments.UsageError(description: "keys list takes no argument")
            }
        }
        return try CommandLineInterface.withAdminConnection(dataDirectory: parsed.options["data-dir"]) { conninfo in
            let connection = try CommandLineInterface.adminConnection(conninfo)
            _ = try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all)
            let keys = APIKeys()
            switch subcommand {
            case "create":
                let name = parsed.options["name"] ?? ""
                let secret = try keys.create(name: name, scopes: scopes, on: connection)
                print("created key \(name); its secret is shown once, store it now:")
                print(secret)
            case "list":
                let listed = try keys.list(on: connection)
                if listed.isEmpty {
                    // On stderr: stdout stays the listing (empty), for scripts.
                    CommandLineInterface.printError(
                        "no API keys yet: iap-ledger keys create --name NAME --scopes read,write,admin")
                }
                for key in listed {
                    let state = key.revokedAt.map { "revoked \($0)" } ?? "active"
                    print("\(key.name)\t\(key.scopes.joined(separator: ","))\tcreated \(key.createdAt)\t\(state)")
                }
            case "revoke":
                try keys.revoke(name: parsed.positionals[1], on: connection)
                print("revoked \(parsed.positionals[1])")
            default:
                preconditionFailure("checked above")
            }
            return 0
        }
    }
}
