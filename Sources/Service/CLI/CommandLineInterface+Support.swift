import Foundation

/// What every command shares: the one-line error, the environment, the migrations folder,
/// the configuration file and the admin connection found as `serve` finds its database.
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

    /// The migrations folder: `IAP_LEDGER_MIGRATIONS`, else `./migrations`, else the one
    /// beside the source tree the binary was built from, else `/usr/share/iap-ledger/migrations`.
    static func migrationsDirectory() -> String {
        if let explicit = environment("IAP_LEDGER_MIGRATIONS") { return explicit }
        var candidates = [FileManager.default.currentDirectoryPath + "/migrations"]
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        // .build/<triple>/<config>/iap-ledger → the package root is three levels up.
        var root = executable.deletingLastPathComponent()
        for _ in 0..<4 {
            root = root.deletingLastPathComponent()
            candidates.append(root.path + "/migrations")
        }
        candidates.append("/usr/share/iap-ledger/migrations")
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/0001_create_roles.sql") } ?? candidates[0]
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

    /// The same, but a missing embedded cluster is created: only for `testkit init`, which like
    /// `serve` may make one (docs/api.md §1). Every other command must not.
    static func withAdminConnection<T>(
        dataDirectory: String?, creatingCluster: Bool, _ body: (String) throws -> T
    ) throws -> T {
        try DatabaseLocator.withDatabase(dataDirectory: dataDirectory, creatingCluster: creatingCluster) { conninfo, _ in
            try body(conninfo)
        }
    }
}
