import Foundation
import TestSupport
import Testing

@Suite(.tags(.database)) struct CLIMigrateTests {
    @Test func migrateAppliesEachFileOnce() throws {
        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let first = try OpsBinary.run(["migrate"], environment: ["DATABASE_URL": conninfo])
        #expect(first.status == 0, "\(first.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: TestDatabase.migrationsDirectory)
            .filter { $0.hasSuffix(".sql") }.sorted()
        #expect(first.stdout == files.map { "applied \($0)\n" }.joined())

        let second = try OpsBinary.run(["migrate"], environment: ["DATABASE_URL": conninfo])
        #expect(second.status == 0)
        #expect(second.stdout == "nothing to apply\n")
    }

    @Test func migrateOnAStoppedClusterStartsAndStopsIt() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        // A fresh data directory has no cluster to migrate: migrate never creates one.
        let fresh = try OpsBinary.run(["migrate", "--data-dir", data])
        CLIBadInputTests.expectOneLineFailure(fresh, containing: ["no embedded cluster in \(data)"])
        #expect(!FileManager.default.fileExists(atPath: data))

        #expect(try OpsServe(["--port", "0", "--data-dir", data]).stop() == 0)
        let outcome = try OpsBinary.run(["migrate", "--data-dir", data])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout == "nothing to apply\n")
        #expect(OpsServeProcessTests.postmasterPID(data) == nil)
    }

    @Test func migrateUsesDATABASEURLAndStartsNothing() throws {
        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let outcome = try OpsBinary.run(
            ["migrate", "--data-dir", root + "/unused"], environment: ["DATABASE_URL": conninfo])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("applied 0001_create_roles.sql"))
        #expect(!FileManager.default.fileExists(atPath: root + "/unused"))
    }
}
