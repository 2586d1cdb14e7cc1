import AppStore
import EventStore
import Foundation
import JSON

/// `iap-ledger <command>`: serve, migrate, keys, verify, replay. Every failure is one line on
/// standard error and a non-zero exit, never a stack trace.
public enum CommandLineInterface {
    static let usage = """
        usage: iap-ledger <command> [options]

        commands:
          serve [--config FILE] [--port N] [--data-dir DIR] [--host ADDR] [--threads N] [--db-connections N]
                                  run the service (embedded PostgreSQL unless DATABASE_URL is set)
          migrate [--data-dir DIR]  apply pending migrations and exit
          keys create --name NAME --scopes read,write,admin [--data-dir DIR]
          keys list [--data-dir DIR]
          keys revoke NAME [--data-dir DIR]
          verify [--config FILE] [--kind transaction|renewal|notification] FILE|-
                                  verify one signed payload exactly as ingestion would
          replay [--dry-run] [--projection NAME] [--json] [--data-dir DIR] [--config FILE]
                                  rebuild every projection from the event log (under the recorded catalog)
          catalog show [--data-dir DIR]
                                  the product catalog in force (recorded in the event log) as JSON
          catalog diff --config FILE [--json] [--data-dir DIR]
                                  which users the file's catalog would change, and how (changes nothing)
          catalog record --config FILE [--data-dir DIR]
                                  record the file's catalog as the newest version (also an older one)
          testkit init|purchase|notify|receipt|apple [--data-dir DIR] …
                                  a local test store: signed test data for a LocalTesting app,
                                  and a verifyReceipt stand-in for its StoreKit 1 receipts
                                  (see iap-ledger testkit --help)
          psql [--role iap_analyst|iap_ledger_service] [--data-dir DIR] [-- PSQL-ARGS…]
                                  psql on the service's database

        Every command but serve, verify and testkit finds the database as serve does (DATABASE_URL,
        else the embedded cluster under --data-dir, default ./.iap-ledger), says on stderr which one
        it uses, and never creates a cluster: with none there it stops and says where it looked.

        environment: DATABASE_URL, PORT, IAP_LEDGER_CONFIG, IAP_LEDGER_HOST, IAP_LEDGER_MIGRATIONS,
          IAP_LEDGER_KEY_CACHE_SECONDS (how long serve trusts a key before asking PostgreSQL again,
          default 30: a key revoked with `keys revoke` stops working within that time),
          IAP_LEDGER_USER_CACHE_MB (memory for cached user documents, default 32; 0 turns the cache off)
        """

    public static func main(_ arguments: [String]) -> Int32 {
        guard let command = arguments.first else {
            printError(usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        do {
            switch command {
            case "serve": return try serve(rest)
            case "migrate": return try migrate(rest)
            case "keys": return try keys(rest)
            case "verify": return try verify(rest)
            case "replay": return try replay(rest)
            case "testkit": return try TestkitCommand.run(rest)
            case "psql": return try PsqlCommand.run(rest)
            case "catalog": return try CatalogCommand.run(rest)
            case "--help", "-h", "help":
                print(usage)
                return 0
            default:
                printError("iap-ledger: unknown command \"\(command)\"\n\n\(usage)")
                return 2
            }
        } catch let error as CommandLineArguments.UsageError {
            printError("iap-ledger \(command): \(oneLine(error.description)) (see iap-ledger \(command) --help)")
            return 2
        } catch {
            printError("iap-ledger \(command): \(oneLine("\(error)"))")
            return 1
        }
    }

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

    static func serve(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(
            arguments, valued: ["config", "port", "data-dir", "host", "threads", "db-connections"], switches: [])
        if parsed.wantsHelp {
            print(usage)
            return 0
        }
        var options = ServiceApp.Options(migrationsDirectory: migrationsDirectory())
        options.configuration = try loadConfiguration(parsed.options["config"])
        options.configurationPath = parsed.options["config"] ?? environment("IAP_LEDGER_CONFIG")
        if let port = parsed.options["port"] ?? environment("PORT") {
            guard let number = Int(port), (0...65535).contains(number) else {
                let source = parsed.options["port"] == nil ? "PORT" : "--port"
                throw CommandLineArguments.UsageError(description: "\(source) must be 0…65535, got \"\(port)\"")
            }
            options.port = number
        }
        if let threads = parsed.options["threads"] {
            guard let number = Int(threads), (1...256).contains(number) else {
                throw CommandLineArguments.UsageError(description: "--threads must be 1…256, got \(threads)")
            }
            options.threads = number
        }
        if let connections = parsed.options["db-connections"] {
            guard let number = Int(connections), (1...256).contains(number) else {
                throw CommandLineArguments.UsageError(description: "--db-connections must be 1…256, got \(connections)")
            }
            options.databaseConnections = number
        }
        options.host = parsed.options["host"] ?? environment("IAP_LEDGER_HOST") ?? options.host
        if let seconds = environment("IAP_LEDGER_KEY_CACHE_SECONDS") {
            guard let number = Int64(seconds), (0...3600).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "IAP_LEDGER_KEY_CACHE_SECONDS must be 0…3600, got \"\(seconds)\"")
            }
            options.keyCacheMillis = number * 1000
        }
        if let megabytes = environment("IAP_LEDGER_USER_CACHE_MB") {
            guard let number = Int(megabytes), (0...65536).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "IAP_LEDGER_USER_CACHE_MB must be 0…65536, got \"\(megabytes)\"")
            }
            options.userCacheBytes = number << 20
        }
        options.databaseURL = environment("DATABASE_URL")
        options.dataDirectory = parsed.options["data-dir"] ?? options.dataDirectory

        // Block the stop signals before any thread starts: MHD's workers inherit the mask, and
        // this thread waits for them with sigwait.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let app = try ServiceApp.start(options)
        if options.configuration.apps.isEmpty {
            options.logger.warning("no apps configured: every signed payload will be refused as unknown_app")
        }
        print("iap-ledger listening on \(app.url)")
        fflush(nil)
        var received: Int32 = 0
        sigwait(&signals, &received)
        options.logger.info("stopping", ["signal": received == SIGTERM ? "SIGTERM" : "SIGINT"])
        app.stop()
        options.logger.info("stopped")
        return 0
    }

    static func migrate(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["data-dir"], switches: [])
        if parsed.wantsHelp {
            print("usage: iap-ledger migrate [--data-dir DIR]   (DATABASE_URL selects an external server; never creates a cluster)")
            return 0
        }
        let directory = migrationsDirectory()
        try withAdminConnection(dataDirectory: parsed.options["data-dir"]) { conninfo in
            let connection = try Connection(conninfo, connectTimeout: 10)
            let applied = try Migrator.migrate(connection: connection, directory: directory)
            print(applied.isEmpty ? "nothing to apply" : applied.map { "applied \($0)" }.joined(separator: "\n"))
        }
        return 0
    }

    static func keys(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["name", "scopes", "data-dir"], switches: [])
        let keyUsage = """
            usage: iap-ledger keys create --name NAME --scopes read,write,admin [--data-dir DIR]
                   iap-ledger keys list [--data-dir DIR]
                   iap-ledger keys revoke NAME [--data-dir DIR]
              the database is found as serve finds it (DATABASE_URL, else --data-dir, default ./.iap-ledger)
            """
        if parsed.wantsHelp {
            print(keyUsage)
            return 0
        }
        guard let subcommand = parsed.positionals.first else {
            printError(keyUsage)
            return 2
        }
        guard ["create", "list", "revoke"].contains(subcommand) else {
            throw CommandLineArguments.UsageError(description: "unknown keys subcommand \"\(subcommand)\"")
        }
        // Check the arguments before starting a cluster for nothing.
        var scopes: [String] = []
        switch subcommand {
        case "create":
            guard let scopeText = parsed.options["scopes"], parsed.options["name"] != nil else {
                throw CommandLineArguments.UsageError(description: "keys create needs --name and --scopes")
            }
            do {
                scopes = try APIKeys.parseScopes(scopeText)
            } catch {
                throw CommandLineArguments.UsageError(description: error.description)
            }
        case "revoke":
            guard parsed.positionals.count == 2 else {
                throw CommandLineArguments.UsageError(description: "keys revoke needs the key's name")
            }
        default:
            guard parsed.positionals.count == 1 else {
                throw CommandLineArguments.UsageError(description: "keys list takes no argument")
            }
        }
        let directory = migrationsDirectory()
        return try withAdminConnection(dataDirectory: parsed.options["data-dir"]) { conninfo in
            let connection = try Connection(conninfo, connectTimeout: 10)
            _ = try Migrator.migrate(connection: connection, directory: directory)
            let keys = APIKeys()
            switch subcommand {
            case "create":
                let name = parsed.options["name"] ?? ""
                let secret = try keys.create(name: name, scopes: scopes, on: connection)
                print("created key \(name); its secret is shown once, store it now:")
                print(secret)
            case "list":
                for key in try keys.list(on: connection) {
                    let state = key.revokedAt.map { "revoked \($0)" } ?? "active"
                    print("\(key.name)\t\(key.scopes.joined(separator: ","))\tcreated \(key.createdAt)\t\(state)")
                }
            case "revoke":
                try keys.revoke(name: parsed.positionals[1], on: connection)
                print("revoked \(parsed.positionals[1])")
            default:
                preconditionFailure("checked above")
            }
            return 0
        }
    }

    static func verify(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["config", "kind"], switches: [])
        let verifyUsage = "usage: iap-ledger verify [--config FILE] [--kind transaction|renewal|notification] FILE|-"
        if parsed.wantsHelp {
            print(verifyUsage)
            return 0
        }
        guard parsed.positionals.count == 1 else {
            printError(verifyUsage)
            return 2
        }
        let configuration = try loadConfiguration(parsed.options["config"])
        let source = parsed.positionals[0]
        let data = source == "-"
            ? FileHandle.standardInput.readDataToEndOfFile() : FileHandle(forReadingAtPath: source)?.readDataToEndOfFile()
        guard let data else { throw CommandLineArguments.UsageError(description: "cannot read \(source)") }
        let jws = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let verifier = try SignedDataVerifier(
            trustedRootsDER: configuration.trustedRootsDER.isEmpty ? [AppleRoots.g3DER] : configuration.trustedRootsDER,
            apps: configuration.apps.map {
                AppIdentity(bundleId: $0.bundleId, appAppleId: $0.appAppleId, environments: Set($0.environments))
            })
        let kindWord = parsed.options["kind"] ?? PayloadPeek.kind(of: jws)
        guard let kind = SignedDataKind(rawValue: kindWord) else {
            throw CommandLineArguments.UsageError(description: "--kind must be transaction, renewal or notification")
        }
        do {
            print(try verifier.decodedJSON(kind: kind, jws: jws))
            return 0
        } catch {
            print(error.reason.rawValue)
            // An explicit --kind that does not match the payload fails on some unrelated field
            // ("bundleId missing"): say what the payload looks like instead of leaving a riddle.
            var hint = ""
            if let looksLike = PayloadPeek.detectedKind(of: jws), looksLike != kind.rawValue {
                hint = " (the payload looks like a \(looksLike), not a \(kind.rawValue): try --kind \(looksLike))"
            }
            printError("rejected: \(error.detail)\(hint)")
            return 1
        }
    }

    static func replay(_ arguments: [String]) throws -> Int32 { try ReplayCommand.run(arguments) }
}

/// Reads a JWS payload without verifying it, only to pick the verifier method to run.
enum PayloadPeek {
    static func kind(of jws: String) -> String { detectedKind(of: jws) ?? "transaction" }

    /// The kind the payload's fields show, or nil when it shows none (not a JWS, no telling field).
    static func detectedKind(of jws: String) -> String? {
        let segments = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else { return nil }
        var text = segments[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text), let payload = try? JSONValue.parse(Array(data)) else {
            return nil
        }
        if payload["notificationType"] != nil { return "notification" }
        if payload["transactionId"] != nil { return "transaction" }
        if payload["autoRenewStatus"] != nil || payload["autoRenewProductId"] != nil { return "renewal" }
        return nil
    }
}
