import Arguments
import EventStore
import Infrastructure
import Synchronization

/// `--database-pool-mode session|transaction` (or `DATABASE_POOL_MODE`): how every command that
/// connects treats its connections. `transaction` when DATABASE_URL is PgBouncer in
/// `pool_mode = transaction`: no named prepared statement, settings per transaction.
/// Taken out of the arguments before the command parses its own, so every command has it.
extension CommandLineInterface {
    package static let poolModeFlag = "database-pool-mode"
    /// The flag's value as given (validated where a command connects).
    private static let poolModeArgument = Mutex<String?>(nil)

    /// `arguments` without `--database-pool-mode X` / `--database-pool-mode=X`, the value kept.
    package static func extractPoolMode(_ arguments: [String]) throws(CommandLineArguments.UsageError) -> [String] {
        var rest: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                rest += arguments[index...]
                break
            }
            if argument == "--\(poolModeFlag)" {
                guard index + 1 < arguments.count else {
                    throw CommandLineArguments.UsageError(
                        description: "--\(poolModeFlag) needs a value (\(ServiceSettings.poolMode.rule ?? ""))")
                }
                poolModeArgument.withLock { $0 = arguments[index + 1] }
                index += 2
                continue
            }
            if argument.hasPrefix("--\(poolModeFlag)=") {
                poolModeArgument.withLock { $0 = String(argument.dropFirst(poolModeFlag.count + 3)) }
            } else {
                rest.append(argument)
            }
            index += 1
        }
        return rest
    }

    /// The flags every command takes, taken out before its own are parsed, with the command's
    /// own: what `ServiceSettings` reads a setting from.
    package static func flags(_ parsed: CommandLineArguments) -> [String: String] {
        var flags = parsed.options
        if let mode = poolModeArgument.withLock({ $0 }) { flags[poolModeFlag] = mode }
        return flags
    }

    /// The flag, else `DATABASE_POOL_MODE`, else session; a bad value is a usage error naming it.
    package static func databasePoolMode() throws(CommandLineArguments.UsageError) -> PoolMode {
        let flags = poolModeArgument.withLock { $0 }.map { [poolModeFlag: $0] } ?? [:]
        do throws(SettingError) {
            return try ServiceSettings.poolMode.value(flags: flags, environment: processEnvironment) ?? .session
        } catch {
            throw CommandLineArguments.UsageError(description: error.description)
        }
    }

    /// A command's superuser connection (migrations, keys): no role, the pool mode only.
    package static func adminConnection(_ conninfo: String) throws -> Connection {
        try Connection(conninfo, connectTimeout: 10, session: SessionSettings(poolMode: try databasePoolMode()))
    }
}
