import Foundation
import Glibc
import TestSupport
import Testing

/// Every command but `serve` finds the database exactly as `serve` does, says on stderr which
/// one it uses, and never creates a cluster (docs/api.md §1). Before, `keys create` run from another
/// directory created `./.iap-ledger` and printed a key the running server rejected.
@Suite(.tags(.database)) struct CLIDatabaseLocationTests {
    static let commands: [[String]] = [
        ["keys", "create", "--name", "ops", "--scopes", "read"], ["keys", "list"], ["keys", "revoke", "ops"],
        ["migrate"], ["replay", "--dry-run"], ["psql", "--", "-At", "-c", "SELECT 1"],
    ]

    @Test func besideAServeOnAnotherDataDirectoryEveryCommandStopsNamingWhereItLookedAndCreatesNothing() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let elsewhere = root + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
        let serve = try OpsServe(["--port", "0", "--data-dir", root + "/data"])
        defer { _ = serve.stop() }

        for arguments in Self.commands {
            let outcome = try OpsBinary.run(arguments, workingDirectory: elsewhere)
            CLIBadInputTests.expectOneLineFailure(
                outcome, containing: [elsewhere + "/.iap-ledger", "--data-dir", "DATABASE_URL", "iap-ledger serve"])
            #expect(outcome.stdout.isEmpty, "\(arguments): \(outcome.stdout)")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty,
                "\(arguments) created something in the working directory")
            // A mistyped --data-dir is named as given, made absolute, and not created either.
            let typo = try OpsBinary.run(
                [arguments[0], "--data-dir", "dat"] + arguments.dropFirst(), workingDirectory: root)
            CLIBadInputTests.expectOneLineFailure(typo, containing: ["no embedded cluster in \(root)/dat "])
            #expect(!FileManager.default.fileExists(atPath: root + "/dat"), "\(arguments) created \(root)/dat")
        }
        #expect(try OpsHTTP.get(port: serve.port, "/readyz").status == 200)
    }

    @Test func eachCommandSaysOnStderrWhichDatabaseItUses() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        let serve = try OpsServe(["--port", "0", "--data-dir", data])
        let running = "iap-ledger: using the embedded cluster in \(data) (running, started by iap-ledger serve)"

        // Relative --data-dir, from the serve's parent directory: the same cluster.
        let created = try OpsBinary.run(
            ["keys", "create", "--name", "backend", "--scopes", "read", "--data-dir", "data"], workingDirectory: root)
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stderrLines == [running])
        let secret = try #require(created.stdout.split(separator: "\n").last.map(String.init))
        #expect(
            try OpsHTTP.get(port: serve.port, "/v1/users/u1", headers: ["Authorization": "Bearer \(secret)"]).status
                == 200,
            "the key works on the running server: it was created in its database")

        let migrated = try OpsBinary.run(["migrate", "--data-dir", data])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.stdout == "nothing to apply\n")
        #expect(migrated.stderrLines == [running])

        let replay = try OpsBinary.run(["replay", "--dry-run", "--data-dir", data])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.stderrLines.first == running, "\(replay.stderr)")

        // Stopped: started for the command, said so, and stopped again.
        #expect(serve.stop() == 0)
        let listed = try OpsBinary.run(["keys", "list", "--data-dir", data])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.hasPrefix("backend\tread\t"), "\(listed.stdout)")
        #expect(
            listed.stderrLines == [
                "iap-ledger: using the embedded cluster in \(data) (not running: started for this command, stopped after)"
            ])
        #expect(OpsServeProcessTests.postmasterPID(data) == nil, "the cluster was left running")

        // DATABASE_URL wins, as for serve; named without its password.
        let conninfo = try TestDatabase.shared.freshDatabase() + " password=hunter2"
        let database = try #require(conninfo.firstMatch(of: /dbname='?([A-Za-z0-9_]+)/)?.1)
        let external = try OpsBinary.run(["keys", "list", "--data-dir", data], environment: ["DATABASE_URL": conninfo])
        #expect(external.status == 0, "\(external.stderr)")
        #expect(external.stdout.isEmpty, "a fresh database has no key")
        #expect(external.stderrLines.count == 2, "\(external.stderr)")
        #expect(
            external.stderrLines.last == "no API keys yet: iap-ledger keys create --name NAME --scopes read,write,admin"
        )
        #expect(external.stderr.hasPrefix("iap-ledger: using DATABASE_URL \(database) on "), "\(external.stderr)")
        #expect(external.stderr.contains("(--data-dir is ignored"), "\(external.stderr)")
        #expect(!external.stderr.contains("hunter2"))
    }

    @Test func psqlRunsOnTheServesClusterAndAsTheAnalystCannotReadTheLog() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        let serve = try OpsServe(["--port", "0", "--data-dir", data])
        defer { _ = serve.stop() }
        let psql = { (arguments: [String]) throws -> OpsBinary.Outcome in
            try OpsBinary.run(["psql", "--data-dir", data] + arguments)
        }

        let plain = try psql(["--", "-At", "-c", "SELECT current_user, current_database()"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout == "postgres|iap_ledger\n")
        #expect(
            plain.stderrLines == [
                "iap-ledger: using the embedded cluster in \(data) (running, started by iap-ledger serve)"
            ])

        let log = try psql(["--role", "iap_analyst", "--", "-At", "-c", "SELECT count(*) FROM es.events"])
        #expect(log.status != 0)
        #expect(log.stderr.contains("permission denied"), "\(log.stderr)")
        let view = try psql([
            "--role", "iap_analyst", "--", "-At", "-c", "SELECT current_user, count(*) FROM analytics.subscriptions",
        ])
        #expect(view.status == 0, "\(view.stderr)")
        #expect(view.stdout == "iap_analyst|0\n")

        let typo = try psql(["--role", "analyst"])
        #expect(typo.status == 2)
        #expect(
            typo.stderrLines == [
                "iap-ledger psql: --role must be iap_analyst or iap_ledger_service, got \"analyst\" (see iap-ledger psql --help)"
            ])

        // With DATABASE_URL: the password reaches psql through the environment, not argv.
        let conninfo = try TestDatabase.shared.freshDatabase() + " password=hunter2"
        let database = try #require(conninfo.firstMatch(of: /dbname='?([A-Za-z0-9_]+)/)?.1)
        let external = try OpsBinary.run(
            ["psql", "--", "-At", "-c", "SELECT current_database()"], environment: ["DATABASE_URL": conninfo])
        #expect(external.status == 0, "\(external.stderr)")
        #expect(external.stdout == "\(database)\n")
    }

    @Test func psqlOnAStoppedClusterStartsItForTheSessionAndStopsItAfter() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        let serve = try OpsServe(["--port", "0", "--data-dir", data])
        #expect(serve.stop() == 0)
        let outcome = try OpsBinary.run([
            "psql", "--data-dir", data, "--", "-At", "-c", "SELECT count(*) FROM auth.api_keys",
        ])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout == "0\n")
        #expect(OpsServeProcessTests.postmasterPID(data) == nil, "the cluster was left running")
    }
}
