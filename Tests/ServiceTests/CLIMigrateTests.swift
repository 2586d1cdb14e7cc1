import Foundation
import TestSupport
import Testing

@Suite struct CLIMigrateTests {
    @Test func migrateAppliesEachFileOnceOnAFreshDataDirectoryAndStopsItsCluster() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/fresh"
        let first = try OpsBinary.run(["migrate", "--data-dir", data])
        #expect(first.status == 0, "\(first.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: OpsBinary.migrations)
            .filter { $0.hasSuffix(".sql") }.sorted()
        #expect(first.stdout == files.map { "applied \($0)\n" }.joined())
        #expect(OpsServeProcessTests.postmasterPID(data) == nil)

        let second = try OpsBinary.run(["migrate", "--data-dir", data])
        #expect(second.status == 0)
        #expect(second.stdout == "nothing to apply\n")
    }

    @Test func migrateUsesDATABASEURLAndStartsNothing() throws {
        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let outcome = try OpsBinary.run(["migrate", "--data-dir", root + "/unused"], environment: ["DATABASE_URL": conninfo])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("applied 0001_create_roles.sql"))
        #expect(!FileManager.default.fileExists(atPath: root + "/unused"))
    }
}
