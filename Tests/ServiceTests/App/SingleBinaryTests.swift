import Foundation
import Schema
import SystemCalls
import TestSupport
import Testing

/// The binary alone, copied into an empty directory, runs every command: it carries its
/// migrations (and the rest of what it needs) and never looks for the source tree it was built
/// from. The copy runs from a working directory with nothing in it, and IAP_LEDGER_MIGRATIONS
/// names a folder that does not exist, as a stale deployment might.
@Suite(.serialized, .tags(.database, .slow)) struct SingleBinaryTests {
    /// `root/bin/iap-ledger` (a copy of this build's binary) and an empty `root/work`.
    private static func copiedBinary() throws -> (root: String, binary: String, work: String) {
        let root = try OpsBinary.temporaryDirectory()
        for folder in ["bin", "work"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: false)
            chmod(root + "/" + folder, 0o755)
        }
        let binary = root + "/bin/iap-ledger"
        try copyExecutable(from: OpsBinary.path, to: binary)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/work").isEmpty)
        return (root, binary, root + "/work")
    }

    struct CopyFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// Copies the binary through close-on-exec descriptors. FileManager's copy leaves its
    /// descriptors inheritable: a `serve` another test spawns meanwhile keeps the copy open for
    /// writing for as long as it runs, and executing the copy then fails with ETXTBSY ("Text file
    /// busy"), as it did once under a full suite.
    private static func copyExecutable(from source: String, to destination: String) throws {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw CopyFailure(description: "open \(source): \(SystemCallError.last)") }
        defer { close(input) }
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard output >= 0 else { throw CopyFailure(description: "create \(destination): \(SystemCallError.last)") }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            guard count >= 0 else { throw CopyFailure(description: "read \(source): \(SystemCallError.last)") }
            if count == 0 { return }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, count - written) }
                guard step > 0 else { throw CopyFailure(description: "write \(destination): \(SystemCallError.last)") }
                written += step
            }
        }
    }

    private static let staleMigrations = ["IAP_LEDGER_MIGRATIONS": "/nonexistent/iap-ledger/migrations"]
    private static let ignoredNotice =
        "iap-ledger: IAP_LEDGER_MIGRATIONS is ignored: the migrations are compiled into the binary"

    @Test func theCopiedBinaryMigratesAndServesOnDatabaseURL() throws {
        let (root, binary, work) = try Self.copiedBinary()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let environment = Self.staleMigrations.merging(["DATABASE_URL": conninfo]) { $1 }

        let migrated = try OpsBinary.run(
            ["migrate"], environment: environment, executable: binary, workingDirectory: work)
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.stdout == SchemaMigrations.all.map { "applied \($0.name)\n" }.joined())
        #expect(migrated.stderrLines.first == Self.ignoredNotice)
        // Every file of the repository's migrations/ was applied, from the binary alone.
        let names = try TestDatabase.migrationFiles().map(\.name)
        #expect(migrated.stdout == names.map { "applied \($0)\n" }.joined())

        let key = try OpsBinary.run(
            ["keys", "create", "--name", "alone", "--scopes", "read,write,admin"], environment: environment,
            executable: binary, workingDirectory: work)
        #expect(key.status == 0, "\(key.stderr)")
        let secret = String(key.stdout.split(separator: "\n").last ?? "")

        let serve = try OpsServe(["--port", "0"], environment: environment, executable: binary, workingDirectory: work)
        #expect(try OpsHTTP.get(port: serve.port, "/readyz").status == 200)
        let user = try OpsHTTP.get(
            port: serve.port, "/v1/users/u-alone", headers: ["Authorization": "Bearer \(secret)"])
        #expect(user.status == 200, "\(user.body)")
        #expect(user.body.contains(#""userId":"u-alone""#))
        #expect(serve.stop() == 0, "\(serve.stderr)")
        #expect(!serve.stderr.contains("level=error"), "\(serve.stderr)")
        // serve wrote nothing into its working directory (the database is DATABASE_URL's).
        #expect(try FileManager.default.contentsOfDirectory(atPath: work).isEmpty)
    }

    @Test func theCopiedBinaryServesOnItsEmbeddedDefaultAndTheOtherCommandsRunBesideIt() throws {
        let (root, binary, work) = try Self.copiedBinary()
        defer { try? FileManager.default.removeItem(atPath: root) }

        // No DATABASE_URL, no --data-dir: the embedded cluster under ./.iap-ledger of the empty directory.
        let serve = try OpsServe(
            ["--port", "0"], environment: Self.staleMigrations, executable: binary, workingDirectory: work)
        #expect(try OpsHTTP.get(port: serve.port, "/readyz").status == 200)
        #expect(FileManager.default.fileExists(atPath: work + "/.iap-ledger/pgdata/PG_VERSION"))

        for command in [
            ["migrate"], ["keys", "create", "--name", "k", "--scopes", "read"], ["keys", "list"],
            ["replay", "--dry-run"], ["catalog", "show"],
        ] {
            let outcome = try OpsBinary.run(
                command, environment: Self.staleMigrations, executable: binary, workingDirectory: work)
            #expect(outcome.status == 0, "\(command): \(outcome.stderr)")
        }
        let migrated = try OpsBinary.run(["migrate"], executable: binary, workingDirectory: work)
        #expect(migrated.stdout == "nothing to apply\n", "serve applied every embedded migration: \(migrated.stderr)")
        #expect(serve.stop() == 0, "\(serve.stderr)")
        #expect(!serve.stderr.contains("level=error"), "\(serve.stderr)")
    }

    /// What `make dist` packs (scripts/dist), unpacked into an empty directory and served from
    /// there with its own sample config. `make dist` links the Swift runtime statically; the
    /// packing and the tarball's use are the same for this build's binary.
    @Test func theDistTarballUnpacksIntoAnEmptyDirectoryAndServes() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let packed = try OpsChild(
            [OpsBinary.packageRoot + "/scripts/dist", OpsBinary.path, root + "/out"],
            environment: OpsBinary.environment([:]),
            executable: "/bin/bash")
        #expect(packed.wait(timeout: 120) == 0, "\(packed.stderr)")
        let tarball = packed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(tarball.hasPrefix(root + "/out/iap-ledger-") && tarball.hasSuffix(".tar.gz"), "\(tarball)")

        let unpackedRoot = root + "/unpacked"
        try FileManager.default.createDirectory(atPath: unpackedRoot, withIntermediateDirectories: false)
        chmod(unpackedRoot, 0o755)
        let untar = try OpsChild(
            ["-C", unpackedRoot, "-xzf", tarball], environment: OpsBinary.environment([:]), executable: "/bin/tar")
        #expect(untar.wait(timeout: 60) == 0, "\(untar.stderr)")
        let top = try FileManager.default.contentsOfDirectory(atPath: unpackedRoot)
        #expect(top.count == 1, "\(top)")
        let directory = unpackedRoot + "/" + (top.first ?? "")
        let files = Set(try FileManager.default.subpathsOfDirectory(atPath: directory))
        for expected in [
            "iap-ledger", "config.example.json", "INSTALL", "licenses/Swift-runtime-LICENSE.txt",
            "deploy/iap-ledger.service", "deploy/iap-ledger.env",
        ] {
            #expect(files.contains(expected), "\(expected) missing from the tarball: \(files.sorted())")
        }
        #expect(!files.contains { $0.hasSuffix(".sql") || $0.hasPrefix("migrations") }, "\(files.sorted())")

        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let serve = try OpsServe(
            ["--port", "0", "--config", "config.example.json"], environment: ["DATABASE_URL": conninfo],
            executable: directory + "/iap-ledger", workingDirectory: directory)
        #expect(try OpsHTTP.get(port: serve.port, "/readyz").status == 200)
        #expect(serve.stop() == 0, "\(serve.stderr)")
        #expect(!serve.stderr.contains("level=error"), "\(serve.stderr)")
    }
}
