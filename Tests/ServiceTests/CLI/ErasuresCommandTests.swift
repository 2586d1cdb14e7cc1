import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import CLI
@testable import Infrastructure
@testable import Service

/// `iap-ledger erasures` (docs/operations.md, "Erasure and backups"): a backup taken before an
/// erasure brings the person back when restored; the newer log's list of erased subjects, which
/// holds nothing personal, erases them again.
@Suite(.tags(.database, .slow)) final class ErasuresCommandTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000
    let ana = "ana-0e7b5c", anon = "anon-ana-93d1", ben = "ben-4c2f8a"

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func coins(_ transactionId: String) -> String {
        Mint.signed(
            Mint.transaction(
                transactionId, product: TestService.coins, type: "Consumable", purchase: service.clock.now - day,
                expires: nil, signed: service.clock.now - day))
    }

    /// A backup as `pg_dump` takes it, restored into a new database of the same cluster.
    func backupRestoredElsewhere() throws -> String {
        let dump = try run(EmbeddedPostgres.clientProgram("pg_dump"), ["--dbname=" + service.conninfo])
        let restored = try TestDatabase.shared.freshDatabase(migrated: false)
        let file = try OpsBinary.temporaryDirectory() + "/backup.sql"
        try dump.write(to: URL(fileURLWithPath: file))
        _ = try run(
            EmbeddedPostgres.clientProgram("psql"),
            ["--dbname=" + restored, "--quiet", "--set=ON_ERROR_STOP=1", "--file=" + file])
        return restored
    }

    func run(_ program: String?, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(program))
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(arguments)")
        return data
    }

    func erasures(_ arguments: [String], on conninfo: String) throws -> OpsBinary.Outcome {
        try OpsBinary.run(["erasures"] + arguments, environment: ["DATABASE_URL": conninfo])
    }

    @Test func aRestoreFromBeforeAnErasureIsErasedAgainFromTheNewerLogsList() throws {
        #expect(try api.purchase(anon, coins("5700101")).status == 200)
        #expect(try api.post("/v1/users/\(ana)/aliases", .object(["alias": .string(anon)])).status == 200)
        #expect(try api.debit(ana, "coins", amount: 5, key: "ana-k-1", reason: "ana's words").status == 200)
        #expect(try api.purchase(ben, coins("5700201")).status == 200)
        let empty = try erasures([], on: service.conninfo)
        #expect(empty.status == 0 && empty.stdout == "", "\(empty.stdout) \(empty.stderr)")
        let restored = try backupRestoredElsewhere()

        // Ana is erased on the live database; the list names her two subjects (user, alias).
        let admin = try Connection(service.conninfo)
        let subjects = try admin.query(
            "SELECT subject FROM identity.subjects WHERE user_id = ANY($1::text[]) ORDER BY subject",
            ["{\(ana),\(anon)}"])
        #expect(subjects.count == 2)
        #expect(try api.request("DELETE", "/v1/users/\(ana)").status == 200)
        let listed = try erasures([], on: service.conninfo)
        #expect(listed.status == 0, "\(listed.stderr)")
        let lines = listed.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(listed.stdout)")
        #expect(
            Set(lines.compactMap { $0.split(separator: " ").last.map(String.init) }) == [
                subjects[0, 0], subjects[1, 0],
            ])
        for secret in [ana, anon, "words"] { #expect(!listed.stdout.contains(secret)) }
        let json = try erasures(["--json"], on: service.conninfo)
        let entries = try JSONValue.parse(Array(json.stdout.utf8)).arrayValue ?? []
        #expect(entries.compactMap { $0["subject"]?.stringValue } == lines.map { String($0.split(separator: " ")[1]) })
        let file = try OpsBinary.temporaryDirectory() + "/erasures.json"
        try Data(json.stdout.utf8).write(to: URL(fileURLWithPath: file))

        // The restored backup still knows her; applying the list erases her there too.
        #expect(try ErasureTests.dump(restored).contains(ana))
        let applied = try erasures(["apply", file], on: restored)
        #expect(applied.status == 0, "\(applied.stderr)")
        // Her alias's subject went with her: one erasure did both.
        #expect(applied.stdout == "erased again: 1 of 2 (1 erased here already, or never known here)\n")
        let dump = try ErasureTests.dump(restored)
        for secret in [ana, anon, "ana's words", "ana-k-1"] { #expect(!dump.contains(secret), "\(secret) restored") }
        #expect(dump.contains(ben))
        let again = try erasures(["apply", file], on: restored)
        #expect(again.stdout == "erased again: 0 of 2 (2 erased here already, or never known here)\n")
    }

    @Test func aListWithoutSubjectsOrAnUnknownSubcommandIsAUsageError() throws {
        let file = try OpsBinary.temporaryDirectory() + "/not-a-list.txt"
        try Data("ana-0e7b5c\n".utf8).write(to: URL(fileURLWithPath: file))
        let refused = try erasures(["apply", file], on: service.conninfo)
        CLIBadInputTests.expectOneLineFailure(refused, containing: ["names no subject"])
        #expect(refused.status == 2)
        let unknown = try erasures(["undo"], on: service.conninfo)
        CLIBadInputTests.expectOneLineFailure(unknown, containing: ["unknown subcommand \"undo\""])
        #expect(
            ErasuresCommand.subjects(in: "x s_0123456789abcdef0123456789abcdef, s_0123456789abcdef0123456789abcdef")
                == ["s_0123456789abcdef0123456789abcdef"])
        #expect(ErasuresCommand.subjects(in: "s_0123456789ABCDEF0123456789abcdef s_12").isEmpty)
    }
}
