import Arguments
import Foundation
import Infrastructure

/// `iap-ledger serve`: starts the service and runs it until SIGINT or SIGTERM.
enum ServeCommand {
    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(
            arguments, valued: ["config", "port", "data-dir", "host", "threads", "http-workers", "db-connections"],
            switches: [])
        if parsed.wantsHelp {
            print(CommandLineInterface.usage)
            return 0
        }
        var options = ServiceApp.Options()
        options.configuration = try CommandLineInterface.loadConfiguration(parsed.options["config"])
        options.configurationPath = parsed.options["config"] ?? CommandLineInterface.environment("IAP_LEDGER_CONFIG")
        if let port = parsed.options["port"] ?? CommandLineInterface.environment("PORT") {
            guard let number = Int(port), (0...65535).contains(number) else {
                let source = parsed.options["port"] == nil ? "PORT" : "--port"
                throw CommandLineArguments.UsageError(description: "\(source) must be 0…65535, got \"\(port)\"")
            }
            options.port = number
        }
        if let threads = try count(parsed, "threads") { options.threads = threads }
        if let workers = try count(parsed, "http-workers", upTo: 64) { options.httpWorkers = workers }
        if let connections = try count(parsed, "db-connections") { options.databaseConnections = connections }
        options.host = parsed.options["host"] ?? CommandLineInterface.environment("IAP_LEDGER_HOST") ?? options.host
        if let seconds = CommandLineInterface.environment("IAP_LEDGER_KEY_CACHE_SECONDS") {
            guard let number = Int64(seconds), (0...3600).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "IAP_LEDGER_KEY_CACHE_SECONDS must be 0…3600, got \"\(seconds)\"")
            }
            options.keyCacheMillis = number * 1000
        }
        if let megabytes = CommandLineInterface.environment("IAP_LEDGER_USER_CACHE_MB") {
            guard let number = Int(megabytes), (0...65536).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "IAP_LEDGER_USER_CACHE_MB must be 0…65536, got \"\(megabytes)\"")
            }
            options.userCacheBytes = number << 20
        }
        if let committers = CommandLineInterface.environment("IAP_LEDGER_INGEST_COMMITTERS") {
            guard let number = Int(committers), (0...64).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "IAP_LEDGER_INGEST_COMMITTERS must be 0…64, got \"\(committers)\"")
            }
            options.ingestCommitters = number
        }
        if let size = CommandLineInterface.environment("IAP_LEDGER_INGEST_BATCH_MAX") {
            guard let number = Int(size), (1...64).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "IAP_LEDGER_INGEST_BATCH_MAX must be 1…64, got \"\(size)\"")
            }
            options.ingestBatchMax = number
        }
        // Behind a load balancer: seconds between SIGTERM and the stop, /readyz answering 503
        // meanwhile, so the balancer's health check moves traffic away before anything is refused.
        var drainSeconds = 0
        if let seconds = CommandLineInterface.environment("IAP_LEDGER_DRAIN_SECONDS") {
            guard let number = Int(seconds), (0...300).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "IAP_LEDGER_DRAIN_SECONDS must be 0…300, got \"\(seconds)\"")
            }
            drainSeconds = number
        }
        if let instance = CommandLineInterface.environment("IAP_LEDGER_INSTANCE") {
            // Shown to people as the holder of background jobs (GET /v1/admin/projections).
            guard (1...200).contains(instance.count),
                !instance.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw CommandLineArguments.UsageError(
                    description:
                        "IAP_LEDGER_INSTANCE must be 1…200 printable characters, got \(instance.count) characters")
            }
            options.instanceName = instance
        }
        options.databaseURL = CommandLineInterface.environment("DATABASE_URL")
        options.databasePoolMode = try CommandLineInterface.databasePoolMode()
        options.databaseReadURL = CommandLineInterface.environment("DATABASE_READ_URL")
        if let millis = CommandLineInterface.environment("IAP_LEDGER_REPLICA_WAIT_MS") {
            guard let number = Int(millis), (0...10_000).contains(number) else {
                throw CommandLineArguments.UsageError(
                    description: "IAP_LEDGER_REPLICA_WAIT_MS must be 0…10000, got \"\(millis)\"")
            }
            options.replicaWaitMillis = number
        }
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
        if received == SIGTERM && drainSeconds > 0 {
            app.beginDraining()
            options.logger.info("draining", ["seconds": String(drainSeconds)])
            // A second SIGTERM or a SIGINT cuts the drain short.
            var timeout = timespec(tv_sec: drainSeconds, tv_nsec: 0)
            _ = sigtimedwait(&signals, nil, &timeout)
        }
        options.logger.info("stopping", ["signal": received == SIGTERM ? "SIGTERM" : "SIGINT"])
        app.stop()
        options.logger.info("stopped")
        return 0
    }

    /// `--NAME N` as a number of threads or connections (1…`upTo`), nil when not given.
    private static func count(_ parsed: CommandLineArguments, _ name: String, upTo limit: Int = 256) throws -> Int? {
        guard let text = parsed.options[name] else { return nil }
        guard let number = Int(text), (1...limit).contains(number) else {
            throw CommandLineArguments.UsageError(description: "--\(name) must be 1…\(limit), got \(text)")
        }
        return number
    }
}
