import AppleAPI
import Arguments
import EventStore
import Foundation
import Infrastructure
import JSON
import Schema
import Service

/// `iap-ledger reconcile [--config FILE] [--since T] [--until T] [--bundle-id B] [--environment E]`
/// (docs/api.md §1, §5): what `POST /v1/admin/reconcile` does, from the command line — Apple's
/// notification history for a window, recorded exactly as the notification endpoint records it.
/// The database is found as `serve` finds it; the Server API keys come from the config.
package enum ReconcileCommand {
    package static let usage = """
        usage: iap-ledger reconcile [--config FILE] [--since T] [--until T] [--bundle-id B]
                                    [--environment Production|Sandbox] [--json] [--data-dir DIR]
          asks Apple's Get Notification History (every page, per app with a serverAPI key and per
          store environment it accepts) for the notifications sent between --since (default 24 h
          ago) and --until (default now), RFC 3339 times within Apple's 180 days, and records those
          that never reached the service, verified exactly as POST /v1/notifications/apple verifies
          them; what did arrive is a duplicate, what does not verify is counted and never recorded.
          The keys come from the config (--config or IAP_LEDGER_CONFIG), as for serve; documents
          are rendered under the recorded catalog in force. Prints the counts (--json: as JSON).
        """

    /// What the command was asked, checked before any database or Apple is touched.
    package struct Request {
        package var since: Int64
        package var until: Int64
        package var bundleId: String?
        package var environment: String?
    }

    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(
            arguments, valued: ["config", "since", "until", "bundle-id", "environment", "data-dir"], switches: ["json"])
        if parsed.wantsHelp {
            print(usage)
            return 0
        }
        guard parsed.positionals.isEmpty else {
            throw CommandLineArguments.UsageError(
                description: "reconcile takes no argument, got \"\(parsed.positionals[0])\"")
        }
        let configPath = CommandLineInterface.configurationPath(parsed)
        let configuration = try CommandLineInterface.loadConfiguration(parsed)
        let request = try check(
            parsed.options, configuration: configuration, configPath: configPath, now: Timestamp.nowMillis())
        return try CommandLineInterface.withAdminConnection(dataDirectory: parsed.options["data-dir"]) { conninfo in
            let admin = try CommandLineInterface.adminConnection(conninfo)
            _ = try Migrator.migrate(connection: admin, migrations: SchemaMigrations.all)
            let service = LedgerService(
                pool: ConnectionPool(
                    conninfo: conninfo, size: 1,
                    session: ServiceRole.session(try CommandLineInterface.databasePoolMode())),
                verifier: try ServiceApp.makeVerifier(configuration: configuration), receipts: nil,
                configuration: configuration, logger: Logger(minimumLevel: .warning),
                catalogs: try catalogs(configuration, on: admin))
            let report: AppleRequests.ReconcileReport
            do throws(ServiceError) {
                report = try Rooms(ledger: service).apple.reconcile(
                    since: request.since, until: request.until, bundleId: request.bundleId,
                    environment: request.environment,
                    context: RequestContext(requestId: "cli-reconcile-\(Timestamp.nowMillis())", source: "reconcile"))
            } catch {
                throw Failure(description: describe(error))
            }
            if parsed.switches.contains("json") {
                let bytes = report.json([
                    ("since", RFC3339.format(request.since)), ("until", RFC3339.format(request.until)),
                ])
                print(String(decoding: bytes, as: UTF8.self))
            } else {
                print(
                    "reconciled \(RFC3339.format(request.since)) … \(RFC3339.format(request.until)): "
                        + "fetched \(report.fetched), recorded \(report.recorded), duplicates \(report.duplicates), "
                        + "rejected \(report.rejected)"
                        + (report.rejected > 0 ? " (did not verify: never recorded)" : ""))
            }
            return 0
        }
    }

    /// The flags, checked against the config: every mistake is a usage error (exit 2) naming it,
    /// found before the database is looked for or Apple asked.
    package static func check(
        _ options: [String: String], configuration: Configuration, configPath: String?, now: Int64
    ) throws(CommandLineArguments.UsageError) -> Request {
        func instant(_ flag: String) throws(CommandLineArguments.UsageError) -> Int64? {
            guard let text = options[flag] else { return nil }
            guard let instant = RFC3339.parse(text) else {
                throw .init(
                    description: "--\(flag) must be an RFC 3339 time such as 2026-12-01T00:00:00Z, got \"\(text)\"")
            }
            return instant
        }
        let since = try instant("since") ?? now - 86_400_000
        let until = try instant("until") ?? now
        guard since < until else {
            throw .init(
                description: "--since (\(RFC3339.format(since))) must be before --until (\(RFC3339.format(until)))")
        }
        let oldest = now - ReconcileRoutes.historyDays * 86_400_000
        guard since >= oldest else {
            throw .init(
                description: "--since must be within the last \(ReconcileRoutes.historyDays) days"
                    + " (Apple keeps no older history)")
        }
        let environment = options["environment"]
        if let environment, environment != "Production" && environment != "Sandbox" {
            throw .init(description: "--environment must be Production or Sandbox, got \"\(environment)\"")
        }
        let file = configPath.map { " in \($0)" } ?? ""
        guard let configPath, !configuration.apps.isEmpty else {
            throw .init(
                description: configPath == nil
                    ? "reconcile needs --config FILE (or IAP_LEDGER_CONFIG): "
                        + "the apps' serverAPI keys come from it, as for serve"
                    : "no app is configured\(file): reconcile asks Apple for an app with a serverAPI key")
        }
        let bundleId = options["bundle-id"]
        var apps = configuration.apps
        if let bundleId {
            apps = apps.filter { $0.bundleId == bundleId }
            guard !apps.isEmpty else {
                throw .init(
                    description: "--bundle-id \(bundleId) is not an app of \(configPath) (apps: "
                        + configuration.apps.map(\.bundleId).joined(separator: ", ") + ")")
            }
        }
        apps = apps.filter { $0.serverAPI != nil }
        guard !apps.isEmpty else {
            let which = bundleId.map { "app \($0) has no" } ?? "no app has a"
            throw .init(
                description: "\(which) serverAPI key\(file): reconcile asks Apple's App Store Server API with it")
        }
        if let environment, !apps.contains(where: { $0.environments.contains(environment) }) {
            throw .init(
                description: "--environment \(environment): no app with a serverAPI key accepts it\(file) ("
                    + apps.map { "\($0.bundleId): \($0.environments.joined(separator: ", "))" }
                    .joined(separator: "; ") + ")")
        }
        return Request(since: since, until: until, bundleId: bundleId, environment: environment)
    }

    /// The catalog documents are rendered under: the recorded one in force (the config's only
    /// while none is recorded, as replay does), so reconciling can never change an answer by itself.
    package static func catalogs(_ configuration: Configuration, on connection: Connection) throws -> CatalogInForce {
        let versions = try CatalogVersions.versions(on: connection)
        guard versions.isEmpty else { return CatalogInForce(versions) }
        let configured = configuration.catalog
        return CatalogInForce([
            CatalogVersion(
                version: 0, catalog: configured, hash: CatalogVersions.hash(configured), source: nil, recordedAt: nil)
        ])
    }

    /// A failure after the checks: Apple or PostgreSQL, in one line (exit 1).
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package static func describe(_ error: ServiceError) -> String {
        switch error {
        case .appleUnavailable(let detail): "Apple's App Store Server API is unavailable (try again later): \(detail)"
        case .appleRejected(let status, let code, let detail):
            "Apple refused the request (HTTP \(status)\(code.map { ", errorCode \($0)" } ?? "")): \(detail)"
        case .storeUnavailable(let detail): "the database is unavailable: \(detail)"
        case .serverAPINotConfigured(let detail), .invalidRequest(let detail): detail
        default: "\(error)"
        }
    }
}
