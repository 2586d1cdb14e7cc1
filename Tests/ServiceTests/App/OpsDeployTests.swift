import Foundation
import Testing

/// deploy/ stays true to the binary: the environment file only sets variables the binary reads,
/// and the unit's command line parses.
@Suite(.tags(.database)) struct OpsDeployTests {
    static let deploy = OpsBinary.packageRoot + "/deploy"

    @Test func theEnvironmentFileSetsOnlyVariablesTheBinaryDocuments() throws {
        let text = try String(contentsOfFile: Self.deploy + "/iap-ledger.env", encoding: .utf8)
        let names = text.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }
            .map { String($0.split(separator: "=")[0]) }
        #expect(names.contains("DATABASE_URL"), "the unit is for an external PostgreSQL")
        let usage = try OpsBinary.run(["--help"]).stdout
        for name in names { #expect(usage.contains(name), "\(name) is not read by iap-ledger") }
    }

    @Test func theUnitRunsServeWithFlagsTheBinaryAccepts() throws {
        let unit = try String(contentsOfFile: Self.deploy + "/iap-ledger.service", encoding: .utf8)
        let execStart = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let words = execStart.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        #expect(words.first == "/usr/local/bin/iap-ledger")
        #expect(words.dropFirst().first == "serve")
        // The same flags plus --help: parsed (an unknown flag would be exit 2), nothing started.
        let parsed = try OpsBinary.run(Array(words.dropFirst()) + ["--help"])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        #expect(unit.contains("KillSignal=SIGTERM"))
        #expect(unit.contains("EnvironmentFile=/etc/iap-ledger/iap-ledger.env"))
    }
}
