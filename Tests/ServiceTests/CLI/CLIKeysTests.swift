import Foundation
import Glibc
import TestSupport
import Testing

/// `iap-ledger keys create|list|revoke` against the cluster of a running `serve` (the usual way
/// an operator adds a key), and what the HTTP API makes of the keys.
@Suite(.tags(.database)) struct CLIKeysTests {
    @Test func createdKeysAuthenticateAreListedWithoutSecretsAndStopWorkingWhenRevoked() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        // Across processes a revocation takes effect when serve's key cache expires: 1 s here.
        let serve = try OpsServe(
            ["--port", "0", "--data-dir", data], environment: ["IAP_LEDGER_KEY_CACHE_SECONDS": "1"])
        defer { _ = serve.stop() }
        let keys = { (arguments: [String]) throws -> OpsBinary.Outcome in
            try OpsBinary.run(["keys"] + arguments + ["--data-dir", data])
        }

        // No key yet: the listing (stdout) is empty, and stderr says so and how to make one.
        let none = try keys(["list"])
        #expect(none.status == 0, "\(none.stderr)")
        #expect(none.stdout == "")
        #expect(
            none.stderrLines.last == "no API keys yet: iap-ledger keys create --name NAME --scopes read,write,admin")

        let created = try keys(["create", "--name", "backend", "--scopes", "read,write"])
        #expect(created.status == 0, "\(created.stderr)")
        let lines = created.stdout.split(separator: "\n").map(String.init)
        let secret = try #require(lines.last)
        #expect(secret.hasPrefix("iap_") && !secret.contains(" "), "the secret alone on the last line")
        let reader = try keys(["create", "--name", "reader", "--scopes", "read"])
        let readerSecret = try #require(reader.stdout.split(separator: "\n").last.map(String.init))

        let bearer = { (key: String) in ["Authorization": "Bearer \(key)"] }
        #expect(try OpsHTTP.get(port: serve.port, "/v1/users/u1", headers: bearer(secret)).status == 200)
        #expect(try OpsHTTP.get(port: serve.port, "/v1/users/u1", headers: bearer(readerSecret)).status == 200)
        #expect(try OpsHTTP.get(port: serve.port, "/v1/users/u1").status == 401)

        let listed = try keys(["list"])
        #expect(listed.status == 0)
        #expect(!listed.stdout.contains(secret) && !listed.stdout.contains(readerSecret), "no secret in the list")
        let backendLine = try #require(listed.stdout.split(separator: "\n").first { $0.hasPrefix("backend\t") })
        #expect(backendLine.contains("\tread,write\t") && backendLine.hasSuffix("\tactive"), "\(backendLine)")

        let duplicate = try keys(["create", "--name", "backend", "--scopes", "read"])
        #expect(duplicate.status == 1)
        #expect(duplicate.stderrLines.last == "iap-ledger keys: a key named \"backend\" already exists")

        let revoked = try keys(["revoke", "backend"])
        #expect(revoked.status == 0, "\(revoked.stderr)")
        #expect(revoked.stdout == "revoked backend\n")
        try eventually("the revoked key still works after the cache TTL", within: 5) {
            (try? OpsHTTP.get(port: serve.port, "/v1/users/u1", headers: bearer(secret)).status) == 401
        }
        #expect(try OpsHTTP.get(port: serve.port, "/v1/users/u1", headers: bearer(readerSecret)).status == 200)
        let after = try keys(["list"])
        let revokedLine = try #require(after.stdout.split(separator: "\n").first { $0.hasPrefix("backend\t") })
        #expect(revokedLine.contains("\trevoked 20"), "\(revokedLine)")

        let again = try keys(["revoke", "backend"])
        #expect(again.status == 1)
        #expect(again.stderrLines.last == "iap-ledger keys: no active key named \"backend\"")

        // The serve's PostgreSQL was shared, never stopped by the keys commands.
        #expect(try OpsHTTP.get(port: serve.port, "/readyz").status == 200)
        #expect(serve.stop() == 0)
    }

    @Test func keysOnAStoppedClusterStartAndStopItThemselves() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        // Only serve creates the cluster; keys never do (CLIDatabaseLocationTests).
        #expect(try OpsServe(["--port", "0", "--data-dir", data]).stop() == 0)
        let created = try OpsBinary.run(["keys", "create", "--name", "first", "--scopes", "admin", "--data-dir", data])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.split(separator: "\n").last?.hasPrefix("iap_") == true)
        #expect(OpsServeProcessTests.postmasterPID(data) == nil, "cluster stopped after the command")
        let listed = try OpsBinary.run(["keys", "list", "--data-dir", data])
        #expect(listed.stdout.hasPrefix("first\tadmin\tcreated "), "\(listed.stdout)")
    }
}
