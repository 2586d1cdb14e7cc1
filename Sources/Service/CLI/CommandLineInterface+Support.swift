import Foundation
import Infrastructure

/// What every command shares: the one-line error, the environment, the configuration file and
/// the admin connection found as `serve` finds its database.
extension CommandLineInterface {
    /// libpq and other libraries write multi-line messages; an operator's log wants one line.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    static func environment(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    static func loadConfiguration(_ path: String?) throws -> Configuration {
        guard let path = path ?? environment("IAP_LEDGER_CONFIG") else { return .empty }
        return try Configuration.load(path: path)
    }

    /// Runs `body` with an admin conninfo found exactly as `serve` finds its database:
    /// DATABASE_URL; else the embedded cluster of the data directory: the one a running `serve`
    /// started (shared, left running), or an existing stopped one started for the duration and
    /// stopped after. Says on stderr which one; never creates a cluster (see DatabaseLocator).
    static func withAdminConnection<T>(dataDirectory: String?, _ body: (String) throws -> T) throws -> T {
        try DatabaseLocator.withDatabase(dataDirectory: dataDirectory) { conninfo, _ in try body(conninfo) }
    }
}
