import Arguments
import EventStore
import Foundation
import Infrastructure
import JSON
import Schema
import Service

/// `iap-ledger erasures [apply FILE]` (docs/operations.md, "Erasure and backups"): a restore from a
/// backup taken before an erasure brings the person back, since the backup holds their keys. The
/// log of a newer database says whom to erase again — each erasure is a `SubjectErased` event
/// naming only the opaque subject — so the list can be kept with the backups for good.
package enum ErasuresCommand {
    package static let usage = """
        usage: iap-ledger erasures [--json] [--data-dir DIR]
          lists the erasures the log records (DELETE /v1/users/{id}), oldest first: when, and the
          person's opaque subject. It holds no personal data: keep it with your backups.
        usage: iap-ledger erasures apply FILE [--config FILE] [--data-dir DIR]
          after restoring a backup taken before some erasures: erases again every person of FILE
          (the list, as either format above prints it, taken from a newer database) that this
          database still knows, as DELETE /v1/users/{id} does; the others are erased here already.
        """

    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["data-dir", "config"], switches: ["json"])
        if parsed.wantsHelp {
            print(usage)
            return 0
        }
        switch parsed.positionals.first {
        case nil:
            return try list(json: parsed.switches.contains("json"), dataDirectory: parsed.options["data-dir"])
        case "apply":
            guard parsed.positionals.count == 2 else {
                throw CommandLineArguments.UsageError(description: "apply takes one FILE, the list to apply")
            }
            let file = parsed.positionals[1]
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw CommandLineArguments.UsageError(description: "cannot read \(file)")
            }
            let subjects = subjects(in: text)
            guard !subjects.isEmpty else {
                throw CommandLineArguments.UsageError(
                    description:
                        "\(file) names no subject (s_ and 32 hex digits): is it a list from `iap-ledger erasures`?")
            }
            let configuration = try CommandLineInterface.loadConfiguration(parsed)
            return try apply(subjects, configuration: configuration, dataDirectory: parsed.options["data-dir"])
        case let other?:
            throw CommandLineArguments.UsageError(description: "unknown subcommand \"\(other)\" (apply, or none)")
        }
    }

    /// The erasures of the log, oldest first.
    package static let erasures: Query = """
        SELECT data->>'userId', (data->>'at')::bigint FROM es.events WHERE type = 'SubjectErased' ORDER BY seq
        """

    private static func list(json: Bool, dataDirectory: String?) throws -> Int32 {
        try CommandLineInterface.withAdminConnection(dataDirectory: dataDirectory) { conninfo in
            let admin = try CommandLineInterface.adminConnection(conninfo)
            _ = try Migrator.migrate(connection: admin, migrations: SchemaMigrations.all)
            let rows = try admin.query(erasures.sql, erasures.params)
            let found: [(subject: String, at: Int64)] = (0..<rows.count).compactMap { row in
                guard let subject = rows[row, 0], let at = rows[row, 1].flatMap({ Int64($0) }) else { return nil }
                return (subject, at)
            }
            if json {
                let array = JSONValue.array(
                    found.map { .object(["subject": .string($0.subject), "erasedAt": .string(RFC3339.format($0.at))]) })
                print(String(decoding: array.serialized(), as: UTF8.self))
            } else {
                for erasure in found { print("\(RFC3339.format(erasure.at)) \(erasure.subject)") }
            }
            return 0
        }
    }

    /// Every subject `text` names, in order, once.
    package static func subjects(in text: String) -> [String] {
        var seen: Set<String> = []
        var found: [String] = []
        for word in text.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }) {
            let candidate = String(word)
            guard candidate.hasPrefix("s_"), candidate.count == 34,
                candidate.dropFirst(2).allSatisfy({ $0.isHexDigit && !$0.isUppercase })
            else { continue }
            if seen.insert(candidate).inserted { found.append(candidate) }
        }
        return found
    }

    private static func apply(_ subjects: [String], configuration: Configuration, dataDirectory: String?) throws
        -> Int32
    {
        try CommandLineInterface.withAdminConnection(dataDirectory: dataDirectory) { conninfo in
            let admin = try CommandLineInterface.adminConnection(conninfo)
            _ = try Migrator.migrate(connection: admin, migrations: SchemaMigrations.all)
            let service = LedgerService(
                pool: ConnectionPool(
                    conninfo: conninfo, size: 1,
                    session: ServiceRole.session(try CommandLineInterface.databasePoolMode())),
                verifier: try ServiceApp.makeVerifier(configuration: configuration), receipts: nil,
                configuration: configuration, logger: Logger(minimumLevel: .warning),
                catalogs: try ReconcileCommand.catalogs(configuration, on: admin))
            var erased = 0
            for subject in subjects {
                // Looked up one by one: erasing a person erases their aliases' subjects too.
                let known = SubjectsTable.existing(subjects: [subject])
                let rows = try admin.query(known.sql, known.params)
                guard rows.count == 1, let userId = rows[0, 0] else { continue }
                do throws(ServiceError) {
                    try Rooms(ledger: service).identities.erase(
                        userId: userId,
                        context: RequestContext(requestId: "cli-erasures-\(Timestamp.nowMillis())", source: "erasures"))
                } catch {
                    throw ReconcileCommand.Failure(description: "erasing \(subject) again failed: \(error)")
                }
                erased += 1
            }
            print(
                "erased again: \(erased) of \(subjects.count)"
                    + (erased < subjects.count
                        ? " (\(subjects.count - erased) erased here already, or never known here)" : ""))
            return 0
        }
    }
}
