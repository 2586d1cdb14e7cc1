import Arguments
import EventStore
import Foundation
import Infrastructure
import Replay
import Schema

/// `iap-ledger replay [--dry-run] [--projection NAME] [--json] [--data-dir DIR] [--config FILE]`.
package enum ReplayCommand {
    package static let usage = """
        usage: iap-ledger replay [--dry-run] [--projection users|analytics] [--downgrade] [--json] [--data-dir DIR] [--config FILE]
          rebuilds projections from the event log (all of them unless --projection names one),
          compares with the live ones and swaps them in; --dry-run only reports what would change.
          A projection the database holds at a newer version than this binary's is refused unless
          --downgrade (rolling a failed upgrade back: instances on the newer code then keep serving,
          instances on this code serve again).
          Progress goes to stderr (a bar on a terminal), the report to stdout (--json: as JSON).
          Documents are rendered under the recorded catalog in force (`iap-ledger catalog show`);
          --config is needed only on a database where no catalog has been recorded yet.
        """

    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(
            arguments, valued: ["projection", "data-dir", "config"], switches: ["dry-run", "json", "downgrade"])
        if parsed.wantsHelp {
            print(usage)
            return 0
        }
        var options = ReplayOptions(dryRun: parsed.switches.contains("dry-run"))
        options.allowDowngrade = parsed.switches.contains("downgrade")
        if let name = parsed.options["projection"] {
            guard ProjectionVersions.definition(named: name) != nil else {
                throw CommandLineArguments.UsageError(
                    description:
                        "--projection must be one of \(ProjectionVersions.all.map(\.name).joined(separator: ", "))")
            }
            options.projections = [name]
        }
        let configuration = try CommandLineInterface.loadConfiguration(parsed)
        return try CommandLineInterface.withAdminConnection(dataDirectory: parsed.options["data-dir"]) { conninfo in
            let poolMode = try CommandLineInterface.databasePoolMode()
            let admin = try CommandLineInterface.adminConnection(conninfo)
            _ = try Migrator.migrate(connection: admin, migrations: SchemaMigrations.all)
            let engine = ReplayEngine(
                conninfo: conninfo, recorded: try catalog(configuration, on: admin), poolMode: poolMode)
            let printer = ReplayProgressPrinter()
            let report: ReplayReport
            do throws(ServiceError) {
                report = try engine.run(options) { printer($0) }
            } catch {
                guard case .projectionVersionAhead(let ahead) = error else { throw error }
                throw ReconcileCommand.Failure(
                    description:
                        "\(ahead.projection): the database is at version \(ahead.database), built by newer code"
                        + " than this binary's (\(ahead.code)); nothing rebuilt (--downgrade rebuilds it with this binary's rules)"
                )
            }
            printer.finish()
            if report.projections.contains(ProjectionVersions.analytics.name) && !options.dryRun {
                let service = try Connection(conninfo, connectTimeout: 10, session: ServiceRole.session(poolMode))
                let applied = try AnalyticsProjector.catchUp(on: service)
                FileHandle.standardError.write(Data("analytics rebuilt: \(applied) events applied\n".utf8))
            }
            print(parsed.switches.contains("json") ? String(decoding: report.jsonBytes(), as: UTF8.self) : report.text)
            return 0
        }
    }

    /// The catalog a replay renders under: the recorded one in force (a config cannot change
    /// it here: forgetting or mistyping --config changes no answer); the config's only while
    /// nothing is recorded (a database no `serve` of this version has started on).
    package static func catalog(_ configuration: Configuration, on connection: Connection) throws -> CatalogVersion {
        let recorded = try CatalogVersions.newest(on: connection)
        let configured = configuration.catalog
        let note: String
        if recorded.version > 0 {
            note =
                "replay: catalog version \(recorded.version) in force (\(recorded.hash.prefix(12)), from \(recorded.source ?? "?"))"
                + (configured.products.isEmpty || CatalogVersions.hash(configured) == recorded.hash
                    ? "" : "; the --config catalog differs and is not used (serve records it)")
            FileHandle.standardError.write(Data((note + "\n").utf8))
            return recorded
        }
        note =
            configured.products.isEmpty
            ? "replay: no catalog recorded and none configured: every product grants what its id names"
            : "replay: no catalog recorded yet: using the --config catalog"
        FileHandle.standardError.write(Data((note + "\n").utf8))
        return CatalogVersion(
            version: 0, catalog: configured, hash: CatalogVersions.hash(configured), source: nil, recordedAt: nil)
    }
}
