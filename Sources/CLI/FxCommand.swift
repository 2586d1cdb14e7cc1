import Arguments
import EventStore
import Foundation
import Infrastructure
import Schema

/// `iap-ledger fx import --base USD FILE.csv` (api.md §3.1): records daily exchange rates into the
/// reporting currency as an event, so `GET /v1/admin/metrics/overview?currency=USD` converts every
/// money series with them (`ExchangeRates`).
package enum FxCommand {
    package static let usage = """
        usage: iap-ledger fx import --base CUR FILE.csv [--data-dir DIR]
          Records the daily exchange rates of FILE.csv (header date,currency,rate; a row says one
          unit of currency was worth rate units of CUR on date, e.g. 2026-12-01,EUR,1.0542) as an
          event of the log. The overview's ?currency=CUR converts every money series at the latest
          rate on or before each amount's day; a currency without one is listed in "unconverted",
          never guessed. Importing again (corrected or new days) restates the past; ?asOf= shows
          what the rates recorded by then gave. One bad row refuses the whole file, naming its line.
        """

    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["base", "data-dir"], switches: [])
        if parsed.wantsHelp {
            print(usage)
            return 0
        }
        guard parsed.positionals.first == "import" else {
            throw CommandLineArguments.UsageError(
                description: parsed.positionals.first.map { "unknown fx subcommand \"\($0)\" (import)" }
                    ?? "fx needs a subcommand (import)")
        }
        guard parsed.positionals.count == 2 else {
            throw CommandLineArguments.UsageError(description: "fx import takes one FILE.csv")
        }
        guard let base = parsed.options["base"] else {
            throw CommandLineArguments.UsageError(
                description: "fx import needs --base CUR (the reporting currency, e.g. USD)")
        }
        guard ExchangeRates.isCurrency(base) else {
            throw CommandLineArguments.UsageError(
                description: "--base must be an ISO 4217 code (three capital letters), got \"\(base)\"")
        }
        let file = parsed.positionals[1]
        // Read and check the whole file before touching a database.
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CommandLineArguments.UsageError(description: "cannot read \(file)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CommandLineArguments.UsageError(description: "\(file) is not UTF-8 text")
        }
        let rates: [ExchangeRates.Rate]
        do {
            rates = try ExchangeRates.parse(text, file: file, base: base)
        } catch {
            throw CommandLineArguments.UsageError(description: error.description)
        }
        let source = URL(fileURLWithPath: file).standardizedFileURL.path
        try CommandLineInterface.withAdminConnection(dataDirectory: parsed.options["data-dir"]) { conninfo in
            let poolMode = try CommandLineInterface.databasePoolMode()
            _ = try Migrator.migrate(
                connection: try CommandLineInterface.adminConnection(conninfo), migrations: SchemaMigrations.all)
            let connection = try Connection(
                conninfo, connectTimeout: 10, session: ServiceRole.sessionWithoutTimeout(poolMode))
            try ExchangeRates.record(rates, base: base, source: source, on: connection)
        }
        let days = rates.map(\.date).sorted()
        let currencies = Set(rates.map(\.currency)).sorted()
        print(
            "recorded \(rates.count) rates into \(base): \(days.first!)…\(days.last!), \(currencies.joined(separator: " "))"
        )
        return 0
    }
}
