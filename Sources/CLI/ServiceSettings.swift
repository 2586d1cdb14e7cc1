import EventStore
import Infrastructure
import Service

/// Every setting iap-ledger reads from its flags and environment, in one table: the flag and the
/// variable (both names are a promise: docs/operations.md, deploy/, README), what it is for, its
/// rule and the `ServiceApp.Options` field it sets. `serve` loads all of them at once
/// (`load(flags:environment:)`); the other commands read the entries they share with it
/// (`config`, `databaseURL`, `poolMode`), so each variable is parsed in one place. The usage
/// text is printed from the same table (ServiceSettings+Loading.swift).
package enum ServiceSettings {
    package static let config = Setting<String>(
        flag: "config", variable: "IAP_LEDGER_CONFIG", placeholder: "FILE",
        about: "the configuration file (apps, products, Apple's keys, webhooks); none: no app is known")
    package static let port = Setting<Int>.number(
        flag: "port", variable: "PORT", in: 0...65535, about: "the HTTP port (0: any free one)")
    package static let host = Setting<String>(
        flag: "host", variable: "IAP_LEDGER_HOST", placeholder: "ADDR", about: "the address to listen on")
    package static let dataDirectory = Setting<String>(
        flag: "data-dir", placeholder: "DIR",
        about: "the embedded PostgreSQL cluster's directory (without DATABASE_URL)")
    package static let threads = Setting<Int>.number(
        flag: "threads", in: 1...256, about: "handler threads: they bound the requests in progress")
    package static let httpWorkers = Setting<Int>.number(
        flag: "http-workers", in: 1...64, about: "HTTP workers: they read every request and send every answer")
    package static let databaseConnections = Setting<Int>.number(
        flag: "db-connections", in: 1...256,
        about: "pooled PostgreSQL connections: they bound the transactions in progress")
    package static let databaseURL = Setting<String>(
        variable: "DATABASE_URL",
        about: "an external PostgreSQL (libpq URL or conninfo); unset: the embedded cluster under --data-dir")
    package static let poolMode = Setting<PoolMode>(
        flag: CommandLineInterface.poolModeFlag, variable: "DATABASE_POOL_MODE", placeholder: "MODE",
        about: "transaction when DATABASE_URL is PgBouncer with pool_mode = transaction (every command)",
        rule: "session or transaction", parse: { PoolMode(rawValue: $0) })
    package static let databaseReadURL = Setting<String>(
        variable: "DATABASE_READ_URL", about: "a streaming replica of DATABASE_URL for history reads; unset: none")
    package static let replicaWaitMillis = Setting<Int>.number(
        variable: "IAP_LEDGER_REPLICA_WAIT_MS", in: 0...10_000,
        about: "how long a history read waits for the replica to catch up before the primary answers it")
    package static let keyCacheSeconds = Setting<Int>.number(
        variable: "IAP_LEDGER_KEY_CACHE_SECONDS", in: 0...3600,
        about: "how long serve trusts a key before asking PostgreSQL again: a key revoked with"
            + " `keys revoke` stops working within that time")
    package static let userCacheMegabytes = Setting<Int>.number(
        variable: "IAP_LEDGER_USER_CACHE_MB", in: 0...65536,
        about: "memory for cached user documents; 0 turns the cache off")
    package static let ingestCommitters = Setting<Int>.number(
        variable: "IAP_LEDGER_INGEST_COMMITTERS", in: 0...64,
        about: "group commit: ingest transactions at once, requests arriving meanwhile share the next; 0 off")
    package static let ingestBatchMax = Setting<Int>.number(
        variable: "IAP_LEDGER_INGEST_BATCH_MAX", in: 1...64,
        about: "group commit: requests one transaction takes at most")
    package static let drainSeconds = Setting<Int>.number(
        variable: "IAP_LEDGER_DRAIN_SECONDS", in: 0...300,
        about: "after SIGTERM, /readyz answers 503 this long before serve stops: behind a load balancer,"
            + " longer than its health check takes to notice")
    package static let instance = Setting<String>(
        flag: nil, variable: "IAP_LEDGER_INSTANCE", placeholder: "",
        about: "this instance's name as the holder of background jobs (GET /v1/admin/projections);"
            + " default <hostname>:<port>:<pid>",
        rule: "1…200 printable characters",
        parse: { name in
            let printable = !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
            return (1...200).contains(name.count) && printable ? name : nil
        },
        // A name with control characters is not echoed into an operator's one-line log.
        shown: { "\($0.count) characters" })

    /// serve's table, in the order the usage text lists it: each setting, the field it sets and
    /// how that field's default is shown (the defaults live in `ServiceApp.Options`, once).
    package static let serve: [OptionSetting] = [
        OptionSetting(config, sets: { $0.configurationPath = $1 }),
        OptionSetting(port, sets: { $0.port = $1 }, shows: { "\($0.port)" }),
        OptionSetting(host, sets: { $0.host = $1 }, shows: { $0.host }),
        OptionSetting(dataDirectory, sets: { $0.dataDirectory = $1 }, shows: { $0.dataDirectory }),
        OptionSetting(threads, sets: { $0.threads = $1 }, shows: { "\($0.threads)" }),
        OptionSetting(httpWorkers, sets: { $0.httpWorkers = $1 }, shows: { "\($0.httpWorkers)" }),
        OptionSetting(
            databaseConnections, sets: { $0.databaseConnections = $1 }, shows: { "\($0.databaseConnections)" }),
        OptionSetting(databaseURL, sets: { $0.databaseURL = $1 }),
        OptionSetting(poolMode, sets: { $0.databasePoolMode = $1 }, shows: { $0.databasePoolMode.rawValue }),
        OptionSetting(databaseReadURL, sets: { $0.databaseReadURL = $1 }),
        OptionSetting(replicaWaitMillis, sets: { $0.replicaWaitMillis = $1 }, shows: { "\($0.replicaWaitMillis)" }),
        OptionSetting(
            keyCacheSeconds, sets: { $0.keyCacheMillis = Int64($1) * 1000 }, shows: { "\($0.keyCacheMillis / 1000)" }),
        OptionSetting(
            userCacheMegabytes, sets: { $0.userCacheBytes = $1 << 20 }, shows: { "\($0.userCacheBytes >> 20)" }),
        OptionSetting(ingestCommitters, sets: { $0.ingestCommitters = $1 }, shows: { "\($0.ingestCommitters)" }),
        OptionSetting(ingestBatchMax, sets: { $0.ingestBatchMax = $1 }, shows: { "\($0.ingestBatchMax)" }),
        OptionSetting(drainSeconds, sets: { $0.drainSeconds = $1 }, shows: { "\($0.drainSeconds)" }),
        OptionSetting(instance, sets: { $0.instanceName = $1 }),
    ]
}

/// A row of serve's table: a setting with the `ServiceApp.Options` field it sets, the types
/// erased so one list holds numbers, text and the pool mode.
package struct OptionSetting: Sendable {
    package var flag: String?
    package var variable: String?
    package var placeholder: String
    package var about: String
    package var rule: String?
    /// The default as the usage text shows it, read from a fresh `ServiceApp.Options`; nil: none.
    package var shows: @Sendable (ServiceApp.Options) -> String?
    /// Reads the setting into `options`; the one line saying why its value is refused, if it is.
    package var apply:
        @Sendable (_ flags: [String: String], _ environment: [String: String], inout ServiceApp.Options) -> String?

    package init<Value>(
        _ setting: Setting<Value>, sets assign: @escaping @Sendable (inout ServiceApp.Options, Value) -> Void,
        shows: @escaping @Sendable (ServiceApp.Options) -> String? = { _ in nil }
    ) {
        flag = setting.flag
        variable = setting.variable
        placeholder = setting.placeholder
        about = setting.about
        rule = setting.rule
        self.shows = shows
        apply = { flags, environment, options in
            do throws(SettingError) {
                if let value = try setting.value(flags: flags, environment: environment) { assign(&options, value) }
                return nil
            } catch {
                return error.description
            }
        }
    }
}
