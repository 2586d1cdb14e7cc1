import AppStore
import Arguments
import Foundation
import JSON

/// `iap-ledger testkit init|purchase|notify|receipt|orders|retention-message|apple` (docs/api.md §1.2): a local test store that mints
/// App Store data signed by its own CA, so every path of the API can be tried without an iPhone.
/// The executable dispatches `iap-ledger testkit` here and hands over `load`, which reads the
/// store's config.json exactly as `serve` reads a config (this target cannot import Service).
public enum TestkitCommand {
    static let common: Set<String> = ["data-dir", "url", "key"]

    public static func run(_ arguments: [String], configuration load: @escaping TestkitConfiguration.Loader) throws
        -> Int32
    {
        guard let subcommand = arguments.first, !subcommand.hasPrefix("--") else {
            if arguments.contains("--help") {
                print(usage)
                return 0
            }
            TestkitCommand.printError(usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        switch subcommand {
        case "init":
            let parsed = try CommandLineArguments(rest, valued: ["data-dir", "apple-port"], switches: [])
            if parsed.wantsHelp {
                print(usage)
                return 0
            }
            try noPositionals(parsed)
            return try initialise(parsed, load)
        case "purchase":
            let parsed = try CommandLineArguments(
                rest,
                valued: common.union([
                    "user", "product", "type", "expires", "quantity", "app-account-token", "billing-plan",
                ]),
                switches: ["print", "apple-only"])
            if parsed.wantsHelp {
                print(usage)
                return 0
            }
            try noPositionals(parsed)
            return try purchase(parsed, load)
        case "notify":
            let parsed = try CommandLineArguments(
                rest,
                valued: common.union([
                    "type", "subtype", "original-transaction-id", "transaction-id", "expires", "percentage",
                ]),
                switches: ["print", "apple-only"])
            if parsed.wantsHelp {
                print(usage)
                return 0
            }
            try noPositionals(parsed)
            return try notify(parsed, load)
        case "receipt":
            let parsed = try CommandLineArguments(rest, valued: common.union(["user", "product"]), switches: ["print"])
            if parsed.wantsHelp {
                print(usage)
                return 0
            }
            try noPositionals(parsed)
            return try receipt(parsed, load)
        case "orders":
            let parsed = try CommandLineArguments(rest, valued: ["data-dir", "user"], switches: [])
            if parsed.wantsHelp {
                print(usage)
                return 0
            }
            try noPositionals(parsed)
            return try orders(parsed, load)
        case "retention-message":
            let parsed = try CommandLineArguments(
                rest, valued: common.union(["original-transaction-id", "product", "locale"]), switches: ["print"])
            if parsed.wantsHelp {
                print(usage)
                return 0
            }
            try noPositionals(parsed)
            return try retentionMessage(parsed, load)
        case "apple":
            let parsed = try CommandLineArguments(rest, valued: ["data-dir", "port", "url"], switches: [])
            if parsed.wantsHelp {
                print(usage)
                return 0
            }
            try noPositionals(parsed)
            return try TestkitApple.run(parsed, load)
        default:
            throw CommandLineArguments.UsageError(
                description:
                    "unknown testkit subcommand \"\(subcommand)\" (expected init, purchase, notify, receipt, orders, retention-message or apple)"
            )
        }
    }

    static func noPositionals(_ parsed: CommandLineArguments) throws(CommandLineArguments.UsageError) {
        if let extra = parsed.positionals.first {
            throw CommandLineArguments.UsageError(description: "unexpected argument \"\(extra)\"")
        }
    }

    static func usageError(_ text: String) -> CommandLineArguments.UsageError { .init(description: text) }

    static func nowMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    static func store(_ parsed: CommandLineArguments, _ load: @escaping TestkitConfiguration.Loader) throws
        -> TestkitStore
    {
        let directory = parsed.options["data-dir"] ?? "./.iap-ledger"
        guard !directory.isEmpty else { throw usageError("--data-dir must not be empty") }
        return TestkitStore(dataDirectory: directory, loadConfiguration: load)
    }

    /// One line on stderr, as the service's commands write theirs.
    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// A set, non-empty environment variable.
    static func environment(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }
}
