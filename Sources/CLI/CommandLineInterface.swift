import Arguments
import Foundation
import Infrastructure

/// `iap-ledger <command>`: serve, migrate, keys, verify, replay. Every failure is one line on
/// standard error and a non-zero exit, never a stack trace.
public enum CommandLineInterface {
    package static let usage = """
        usage: iap-ledger <command> [options]

        commands:
          serve \(ServiceSettings.serveSynopsis)
                                  run the service (embedded PostgreSQL unless DATABASE_URL is set)
          migrate [--data-dir DIR]  apply pending migrations (then, once, the log migration) and exit
          keys create --name NAME --scopes read,write,admin [--data-dir DIR]
          keys list [--data-dir DIR]
          keys revoke NAME [--data-dir DIR]
          verify [--config FILE] [--kind transaction|renewal|notification] FILE|-
                                  verify one signed payload exactly as ingestion would
          replay [--dry-run] [--projection NAME] [--downgrade] [--json] [--data-dir DIR] [--config FILE]
                                  rebuild every projection from the event log (under the recorded catalog)
          catalog show [--data-dir DIR]
                                  the product catalog in force (recorded in the event log) as JSON
          catalog diff --config FILE [--json] [--data-dir DIR]
                                  which users the file's catalog would change, and how (changes nothing)
          catalog record --config FILE [--data-dir DIR]
                                  record the file's catalog as the newest version (also an older one)
          reconcile [--config FILE] [--since T] [--until T] [--bundle-id B] [--environment E] [--json] [--data-dir DIR]
                                  record what Apple's notification history has and never reached us
          testkit init|purchase|notify|receipt|apple [--data-dir DIR] …
                                  a local test store: signed test data for a LocalTesting app,
                                  and a verifyReceipt stand-in for its StoreKit 1 receipts
                                  (see iap-ledger testkit --help)
          fx import --base CUR FILE.csv [--data-dir DIR]
                                  record daily exchange rates (date,currency,rate) for the overview's ?currency=
          erasures [--json] [--data-dir DIR] | erasures apply FILE [--config FILE] [--data-dir DIR]
                                  list the erasures the log records (opaque subjects: keep it with
                                  your backups); after a restore from before some, erase them again
          psql [--role iap_analyst|iap_ledger_service] [--data-dir DIR] [-- PSQL-ARGS…]
                                  psql on the service's database

        Every command but serve, verify and testkit finds the database as serve does (DATABASE_URL,
        else the embedded cluster under --data-dir, default ./.iap-ledger), says on stderr which one
        it uses, and never creates a cluster: with none there it stops and says where it looked.
        Every command that connects takes --database-pool-mode session|transaction (DATABASE_POOL_MODE,
        default session): transaction when DATABASE_URL is PgBouncer with pool_mode = transaction.

        serve's settings, from its flags and the environment (a flag wins over its variable; an empty
        variable counts as unset):
        \(ServiceSettings.settingsText)
        """

    /// Runs one command. `more` adds commands of targets Service does not import (the
    /// executable hands over TestStore's `testkit`), dispatched and reported like its own.
    public static func main(_ arguments: [String], more: [String: ([String]) throws -> Int32] = [:]) -> Int32 {
        guard let command = arguments.first else {
            printError(usage)
            return 2
        }
        if processEnvironment["IAP_LEDGER_MIGRATIONS"]?.isEmpty == false {
            // Set by earlier deployments (deploy/iap-ledger.env); harmless now, but say so once
            // rather than let an operator believe the folder it names is what runs.
            printError("iap-ledger: IAP_LEDGER_MIGRATIONS is ignored: the migrations are compiled into the binary")
        }
        do {
            let rest = try extractPoolMode(Array(arguments.dropFirst()))
            switch command {
            case "serve": return try ServeCommand.run(rest)
            case "migrate": return try MigrateCommand.run(rest)
            case "keys": return try KeysCommand.run(rest)
            case "verify": return try VerifyCommand.run(rest)
            case "replay": return try ReplayCommand.run(rest)
            case "psql": return try PsqlCommand.run(rest)
            case "catalog": return try CatalogCommand.run(rest)
            case "reconcile": return try ReconcileCommand.run(rest)
            case "fx": return try FxCommand.run(rest)
            case "erasures": return try ErasuresCommand.run(rest)
            case "--help", "-h", "help":
                print(usage)
                return 0
            default:
                if let run = more[command] { return try run(rest) }
                printError("iap-ledger: unknown command \"\(command)\"\n\n\(usage)")
                return 2
            }
        } catch let error as CommandLineArguments.UsageError {
            printError("iap-ledger \(command): \(oneLine(error.description)) (see iap-ledger \(command) --help)")
            return 2
        } catch {
            printError("iap-ledger \(command): \(oneLine("\(error)"))")
            return 1
        }
    }
}
