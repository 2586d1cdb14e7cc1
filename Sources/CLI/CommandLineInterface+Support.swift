import Arguments
import Foundation
import Infrastructure

/// What every command shares: the one-line error, the environment, the configuration file and
/// the admin connection found as `serve` finds its database.
extension CommandLineInterface {
    /// libpq and other libraries write multi-line messages; an operator's log wants one line.
    package static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    package static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// The process's environment as a value: what `ServiceSettings` reads settings from (a
    /// test hands its own instead).
    package static var processEnvironment: [String: String] { ProcessInfo.processInfo.environment }

    /// `--config FILE`, else `IAP_LEDGER_CONFIG` (`ServiceSettings.config`), nil when neither.
    package static func configurationPath(_ parsed: CommandLineArguments) -> String? {
        ServiceSettings.config.text(flags: parsed.options, environment: processEnvironment)
    }

    /// The configuration file `configurationPath` names; none: the empty configuration.
    package static func loadConfiguration(_ parsed: CommandLineArguments) throws -> Configuration {
        guard let path = configurationPath(parsed) else { return .empty }
        return try Configuration.load(path: path)
    }

    /// Runs `body` with an admin conninfo found exactly as `serve` finds its database:
    /// DATABASE_URL; else the embedded cluster of the data directory: the one a running `serve`
    /// started (shared, left running), or an existing stopped one started for the duration and
    /// stopped after. Says on stderr which one; never creates a cluster (see DatabaseLocator).
    package static func withAdminConnection<T>(dataDirectory: String?, _ body: (String) throws -> T) throws -> T {
        try DatabaseLocator.withDatabase(dataDirectory: dataDirectory) { conninfo, _ in try body(conninfo) }
    }
}
