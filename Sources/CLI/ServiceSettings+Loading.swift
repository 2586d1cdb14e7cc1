import Arguments
import Foundation
import Infrastructure
import Service

/// The one loader: flags, environment and config file into one validated `ServiceApp.Options`,
/// and the usage text printed from the same table.
extension ServiceSettings {
    /// serve's flags (`--NAME VALUE`), from the table.
    package static var serveFlags: Set<String> { Set(serve.compactMap(\.flag)) }

    /// Every setting of `serve` from `flags` (the parsed `--NAME VALUE`s) and `environment` (a
    /// value, so a test brings its own), a flag winning over its variable over the default; then
    /// the config file they name. Every bad setting is checked, not only the first, and all of
    /// them are one usage error (one line: `PORT must be 0…65535, got "x"; --threads must be …`),
    /// so an operator fixes a unit file in one go. The file is read only when the rest is valid.
    package static func load(flags: [String: String], environment: [String: String]) throws -> ServiceApp.Options {
        var options = ServiceApp.Options()
        var refused: [String] = []
        for setting in serve {
            if let problem = setting.apply(flags, environment, &options) { refused.append(problem) }
        }
        guard refused.isEmpty else {
            throw CommandLineArguments.UsageError(description: refused.joined(separator: "; "))
        }
        if let path = options.configurationPath { options.configuration = try Configuration.load(path: path) }
        return options
    }

    /// `[--port N] [--host ADDR] …`: serve's flags as the usage lines show them.
    package static var serveSynopsis: String {
        serve.compactMap { setting in
            setting.flag.map { "[--\($0) \(setting.placeholder)]" }
        }.joined(separator: " ")
    }

    /// One entry per setting: its flag and variable, its rule and default, then what it is for.
    package static var settingsText: String {
        let defaults = ServiceApp.Options()
        return serve.map { setting in
            let names = [setting.flag.map { "--\($0) \(setting.placeholder)" }, setting.variable].compactMap { $0 }
            let details = [setting.rule, setting.shows(defaults).map { "default \($0)" }].compactMap { $0 }
            let suffix = details.isEmpty ? "" : "  (\(details.joined(separator: ", ")))"
            return "  \(names.joined(separator: ", "))\(suffix)\n      \(setting.about)"
        }.joined(separator: "\n")
    }

    package static var serveUsage: String {
        """
        usage: iap-ledger serve \(serveSynopsis)
          runs the service (embedded PostgreSQL unless DATABASE_URL is set) until SIGINT or SIGTERM

        settings (a flag wins over its variable; an empty variable counts as unset):
        \(settingsText)
        """
    }
}
