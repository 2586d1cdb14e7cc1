/// A small parser for `iap-ledger <command> [subcommand] [--flag value] [--switch] [positional]`.
/// Unknown flags are errors that name the flag, so a typo never silently falls back to a default.
public struct CommandLineArguments: Sendable {
    public var positionals: [String] = []
    public var options: [String: String] = [:]
    public var switches: Set<String> = []
    /// Every value of each valued flag, in order, for flags that may be given more than once
    /// (`options` keeps the last).
    public var repeated: [String: [String]] = [:]

    public struct UsageError: Error, CustomStringConvertible, Sendable {
        public var description: String

        public init(description: String) { self.description = description }
    }

    /// - Parameters:
    ///   - valued: flags that take a value (`--port 8080` or `--port=8080`)
    ///   - switches: flags that take none (`--dry-run`)
    public init(_ arguments: [String], valued: Set<String>, switches allowed: Set<String>) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument != "--" else {
                if argument == "--" {
                    positionals.append(contentsOf: arguments[index...])
                    break
                }
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if allowed.contains(name) || name == "help" {
                guard inlineValue == nil else { throw UsageError(description: "--\(name) takes no value") }
                switches.insert(name)
            } else if valued.contains(name) {
                if let inlineValue {
                    options[name] = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError(description: "--\(name) needs a value") }
                    options[name] = arguments[index]
                    index += 1
                }
                repeated[name, default: []].append(options[name]!)
            } else {
                throw UsageError(description: "unknown option --\(name)")
            }
        }
    }

    public var wantsHelp: Bool { switches.contains("help") }
}
