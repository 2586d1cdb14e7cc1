import Foundation
import Testing

extension ClusterTests {
    /// The fleet's files in deploy/ stay true to the binary and to the script that renders them.
    @Suite(.tags(.database)) struct Config {
        static let deploy = OpsBinary.packageRoot + "/deploy"

        @Test func theTemplateUnitRunsServeWithFlagsTheBinaryAcceptsAndDrainsWithinItsStopTimeout() throws {
            let unit = try String(contentsOfFile: Self.deploy + "/iap-ledger@.service", encoding: .utf8)
            let lines = unit.split(separator: "\n").map(String.init)
            let execStart = try #require(lines.first { $0.hasPrefix("ExecStart=") })
            let words = execStart.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
            #expect(words.first == "/usr/local/bin/iap-ledger")
            let parsed = try OpsBinary.run(Array(words.dropFirst()) + ["--help"])
            #expect(parsed.status == 0, "\(parsed.stderr)")
            for line in [
                "EnvironmentFile=/etc/iap-ledger/%i.env", "KillSignal=SIGTERM", "Restart=on-failure",
                "NoNewPrivileges=true", "ProtectSystem=strict",
            ] {
                #expect(lines.contains(line), "\(line)")
            }
            // The drain the header suggests ends well before systemd would SIGKILL.
            let stop = try #require(lines.first { $0.hasPrefix("TimeoutStopSec=") }.flatMap { Int($0.dropFirst(15)) })
            let drain = try #require(
                lines.first { $0.contains("IAP_LEDGER_DRAIN_SECONDS=") }
                    .flatMap { Int($0.split(separator: "=")[1].prefix { $0.isNumber }) })
            #expect(drain + 10 <= stop, "drain \(drain) s, TimeoutStopSec \(stop) s")
            #expect(try OpsBinary.run(["--help"]).stdout.contains("IAP_LEDGER_DRAIN_SECONDS"))
        }

        @Test(arguments: ["haproxy.cfg", "pgbouncer.ini"])
        func everyPlaceholderOfATemplateIsOneTheScriptFillsIn(template: String) throws {
            let text = try String(contentsOfFile: Self.deploy + "/" + template, encoding: .utf8)
            let script = try String(contentsOfFile: Self.deploy + "/local-cluster", encoding: .utf8)
            // "@NAME@" is how the comments name them.
            let placeholders = Set(text.matches(of: /@[A-Z_]+@/).map { String($0.output) }).subtracting(["@NAME@"])
            #expect(!placeholders.isEmpty)
            for placeholder in placeholders { #expect(script.contains(placeholder), "\(template): \(placeholder)") }
        }
    }
}
