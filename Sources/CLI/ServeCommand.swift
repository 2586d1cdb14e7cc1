import Arguments
import Foundation
import Infrastructure
import Service

/// `iap-ledger serve`: starts the service and runs it until SIGINT or SIGTERM.
package enum ServeCommand {
    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ServiceSettings.serveFlags, switches: [])
        if parsed.wantsHelp {
            print(ServiceSettings.serveUsage)
            return 0
        }
        let options = try ServiceSettings.load(
            flags: CommandLineInterface.flags(parsed), environment: CommandLineInterface.processEnvironment)

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
        if received == SIGTERM && options.drainSeconds > 0 {
            app.beginDraining()
            options.logger.info("draining", ["seconds": String(options.drainSeconds)])
            // A second SIGTERM or a SIGINT cuts the drain short.
            var timeout = timespec(tv_sec: options.drainSeconds, tv_nsec: 0)
            _ = sigtimedwait(&signals, nil, &timeout)
        }
        options.logger.info("stopping", ["signal": received == SIGTERM ? "SIGTERM" : "SIGINT"])
        app.stop()
        options.logger.info("stopped")
        return 0
    }
}
