import Arguments
import EventStore
import Foundation
import Infrastructure
import JSON
import Replay
import Schema

/// `iap-ledger catalog show|diff|record`: the recorded catalog in force (docs/api.md §1.1), which users
/// a config's catalog would change if `serve` recorded it (a dry run that changes nothing), and
/// an operator's explicit recording (the way back to an older version).
package enum CatalogCommand {
    package static let usage = """
        usage: iap-ledger catalog show [--data-dir DIR]
               iap-ledger catalog diff --config FILE [--json] [--data-dir DIR]
               iap-ledger catalog record --config FILE [--data-dir DIR]
          show:   the catalog in force as JSON (version, hash, source file, recordedAt, products)
                  and every recorded version.
          diff:   what `serve --config FILE` would do with the file's catalog, and which users'
                  documents it would change and how (judged against their stored documents).
                  Changes nothing.
          record: records the file's catalog as the newest version and re-renders the users it
                  changes, as serve does, and also when it equals an older version (serve keeps
                  the newest then): the way back to an earlier catalog. Running services follow
                  within a second.
        """

    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["config", "data-dir"], switches: ["json"])
        if parsed.wantsHelp {
            print(usage)
            return 0
        }
        guard parsed.positionals.count == 1, let subcommand = parsed.positionals.first else {
            CommandLineInterface.printError(usage)
            return 2
        }
        // Check the arguments (and read the config) before touching a database.
        var configuration: Configuration?
        var configPath: String?
        switch subcommand {
        case "show":
            guard parsed.options["config"] == nil else {
                throw CommandLineArguments.UsageError(
                    description: "catalog show takes no --config (it shows the recorded catalog)")
            }
        case "diff", "record":
            guard let path = CommandLineInterface.configurationPath(parsed) else {
                throw CommandLineArguments.UsageError(description: "catalog \(subcommand) needs --config FILE")
            }
            let loaded = try Configuration.load(path: path)
            guard !loaded.catalog.products.isEmpty else {
                throw CommandLineArguments.UsageError(
                    description:
                        "\(path) configures no products: serve keeps the recorded catalog, there is nothing to compare")
            }
            configuration = loaded
            configPath = path
        default:
            throw CommandLineArguments.UsageError(
                description: "unknown catalog subcommand \"\(subcommand)\" (show, diff, record)")
        }
        return try CommandLineInterface.withAdminConnection(dataDirectory: parsed.options["data-dir"]) { conninfo in
            let poolMode = try CommandLineInterface.databasePoolMode()
            _ = try Migrator.migrate(
                connection: try CommandLineInterface.adminConnection(conninfo), migrations: SchemaMigrations.all)
            let connection = try Connection(
                conninfo, connectTimeout: 10, session: ServiceRole.sessionWithoutTimeout(poolMode))
            let versions = try CatalogVersions.versions(on: connection)
            guard let configuration, let configPath else {
                print(String(decoding: showJSON(versions), as: UTF8.self))
                return 0
            }
            let configured = configuration.catalog
            if subcommand == "record" {
                let recorded: (versions: [CatalogVersion], decision: CatalogRecorder.Decision, change: CatalogChange?)
                do throws(ServiceError) {
                    recorded = try CatalogRecorder.record(
                        conninfo: conninfo, poolMode: poolMode, configured: configured,
                        source: CatalogVersions.sourcePath(configPath),
                        now: Timestamp.nowMillis(), logger: Logger(minimumLevel: .warning), force: true)
                } catch {
                    // Re-rendering with this binary's rules would undo a newer release's (rolling upgrades).
                    guard case .projectionVersionAhead(let ahead) = error else { throw error }
                    throw ReconcileCommand.Failure(description: "nothing recorded: \(ahead)")
                }
                let (after, decision, change) = recorded
                let newest = after.last ?? .none
                print(
                    decision == .record
                        ? "recorded catalog version \(newest.version) (\(newest.hash.prefix(12))…); re-rendered \(change?.rows.count ?? 0) users"
                        : "catalog version \(newest.version) in force already has this catalog: nothing recorded")
                return 0
            }
            let decision = CatalogRecorder.decide(configured: configured, recorded: versions)
            let change = try CatalogChange.plan(
                catalog: configured, now: Timestamp.nowMillis(), horizon: true, on: connection)
            let source = CatalogVersions.sourcePath(configPath) ?? configPath
            let newest = versions.last ?? .none
            if parsed.switches.contains("json") {
                print(
                    String(
                        decoding: diffJSON(
                            newest, source: source, hash: CatalogVersions.hash(configured),
                            decision: decision, change: change), as: UTF8.self))
            } else {
                print(
                    diffText(
                        newest, source: source, hash: CatalogVersions.hash(configured), decision: decision,
                        change: change))
            }
            return 0
        }
    }

    package static func showJSON(_ versions: [CatalogVersion]) -> [UInt8] {
        let newest = versions.last ?? .none
        var w = JSONWriter(capacity: 1024)
        w.beginObject()
        writeHeader(of: newest, to: &w)
        w.key("catalog")
        w.raw(newest.catalog.canonicalJSON())
        w.key("versions")
        w.beginArray()
        for version in versions {
            w.beginObject()
            writeHeader(of: version, to: &w)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// A version's number, hash, source file and recording time, into an open object.
    package static func writeHeader(of version: CatalogVersion, to w: inout JSONWriter) {
        w.key("version")
        w.int(version.version)
        w.key("hash")
        w.string(version.hash)
        w.key("source")
        w.stringOrNull(version.source)
        w.key("recordedAt")
        w.timestampOrNull(version.recordedAt)
    }

    /// What serve would do, in words and as the `serve` field of the JSON.
    package static func verdict(_ decision: CatalogRecorder.Decision, newest: CatalogVersion) -> (
        word: String, text: String
    ) {
        switch decision {
        case .record: ("record", "serve would record it as version \(newest.version + 1) and re-render the users below")
        case .unchanged: ("unchanged", "it is the version in force: serve records nothing")
        case .older(let version):
            ("older", "it is the older version \(version): serve records nothing and keeps version \(newest.version)")
        case .useRecorded: ("unchanged", "it configures no products: serve keeps the recorded catalog")
        }
    }

    package static func diffJSON(
        _ newest: CatalogVersion, source: String, hash: String, decision: CatalogRecorder.Decision,
        change: CatalogChange
    ) -> [UInt8] {
        var w = JSONWriter(capacity: 1024 + min(change.changed.count, ReplayReport.listLimit) * 256)
        w.beginObject()
        w.key("inForce")
        w.beginObject()
        writeHeader(of: newest, to: &w)
        w.endObject()
        w.key("config")
        w.beginObject()
        w.key("source")
        w.string(source)
        w.key("hash")
        w.string(hash)
        w.key("serve")
        w.string(verdict(decision, newest: newest).word)
        w.endObject()
        w.key("users")
        w.int(Int64(change.users))
        w.key("changedUserCount")
        w.int(Int64(change.changed.count))
        w.key("changedUsers")
        ReplayReport.write(change.changed, to: &w)
        w.key("inFlightUsers")
        w.int(Int64(change.inFlight))
        w.key("dryRun")
        w.bool(true)
        w.endObject()
        return w.bytes
    }

    package static func diffText(
        _ newest: CatalogVersion, source: String, hash: String, decision: CatalogRecorder.Decision,
        change: CatalogChange
    ) -> String {
        var lines: [String] = []
        lines.append(
            newest.version == 0
                ? "catalog in force: none recorded"
                : "catalog in force: version \(newest.version) (\(newest.hash.prefix(12))…, from \(newest.source ?? "?"), recorded \(newest.recordedAt.map(RFC3339.format) ?? "?"))"
        )
        lines.append("config \(source): \(hash.prefix(12))… — \(verdict(decision, newest: newest).text)")
        lines.append(
            "users whose documents would change: \(change.changed.count) of \(change.users)"
                + (change.inFlight > 0 ? "; written meanwhile (not judged): \(change.inFlight)" : ""))
        for user in change.changed.prefix(50) {
            let before = user.before.map { String(decoding: $0.serialized(sortedKeys: true), as: UTF8.self) } ?? "—"
            let after = user.after.map { String(decoding: $0.serialized(sortedKeys: true), as: UTF8.self) } ?? "—"
            lines.append(
                "  \(user.userId) [\(user.fields.joined(separator: ","))]\n    before: \(before)\n    after:  \(after)")
        }
        if change.changed.count > 50 {
            lines.append("  … and \(change.changed.count - 50) more (--json lists up to \(ReplayReport.listLimit))")
        }
        lines.append("nothing was changed (dry run)")
        return lines.joined(separator: "\n")
    }
}
