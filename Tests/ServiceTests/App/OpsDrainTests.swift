import Foundation
import Glibc
import TestSupport
import Testing

/// SIGTERM behind a load balancer (IAP_LEDGER_DRAIN_SECONDS): `/readyz` turns 503 `draining` at
/// once, everything else is still served for the drain time, then serve stops as usual.
@Suite(.serialized, .tags(.database, .slow)) struct OpsDrainTests {
    @Test func sigtermWithADrainTimeTurnsReadinessOffFirstAndKeepsServing() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let serve = try OpsServe(
            ["--port", "0"], environment: ["DATABASE_URL": conninfo, "IAP_LEDGER_DRAIN_SECONDS": "4"])
        #expect(try OpsHTTP.get(port: serve.port, "/readyz").status == 200)
        serve.child.kill(SIGTERM)
        try eventually("(try? OpsHTTP.get(port: serve.port, \"/readyz\").status) == 503", within: 3) {
            (try? OpsHTTP.get(port: serve.port, "/readyz").status) == 503
        }
        let ready = try OpsHTTP.get(port: serve.port, "/readyz")
        #expect(ready.status == 503)
        #expect(ready.headers["retry-after"] == "1")
        #expect(ready.body.contains(#""code":"draining""#), "\(ready.body)")
        // Still serving: liveness, and an API route answering as always (401 without a key).
        #expect(try OpsHTTP.get(port: serve.port, "/healthz").status == 200)
        #expect(try OpsHTTP.get(port: serve.port, "/v1/users/u-1").status == 401)
        #expect(serve.child.isRunning)
        #expect(serve.child.wait(timeout: 60) == 0, "\(serve.stderr)")
        let log = serve.stderr
        #expect(log.contains("msg=draining seconds=4"))
        #expect(log.contains("msg=stopped"))
    }

    @Test func aSecondSignalCutsTheDrainShort() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let serve = try OpsServe(
            ["--port", "0"], environment: ["DATABASE_URL": conninfo, "IAP_LEDGER_DRAIN_SECONDS": "300"])
        serve.child.kill(SIGTERM)
        try eventually("(try? OpsHTTP.get(port: serve.port, \"/readyz\").status) == 503", within: 3) {
            (try? OpsHTTP.get(port: serve.port, "/readyz").status) == 503
        }
        serve.child.kill(SIGINT)
        #expect(serve.child.wait(timeout: 60) == 0, "a drain of 300 s was not cut short: \(serve.stderr)")
    }

    @Test(arguments: ["-1", "301", "soon"])
    func aBadDrainTimeIsOneLineNamingTheVariable(value: String) throws {
        let outcome = try OpsBinary.run(["serve", "--port", "0"], environment: ["IAP_LEDGER_DRAIN_SECONDS": value])
        #expect(outcome.status != 0)
        #expect(outcome.stderrLines.count == 1, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("IAP_LEDGER_DRAIN_SECONDS must be 0…300"), "\(outcome.stderr)")
    }
}
