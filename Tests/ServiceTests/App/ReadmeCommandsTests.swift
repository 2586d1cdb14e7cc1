import Foundation
import Glibc
import TestSupport
import Testing

/// Every command of README.md, run as a newcomer pastes them: each fenced ```sh block, in order,
/// in one bash, with the built binary on PATH, in a fresh directory standing for the checkout, and
/// the tour's data under a temp dir. So the README cannot promise what the binary does not do.
///
/// Blocks that show output are ```text or ```json and are not run; any other fence fails the test.
/// Two commands cannot run inside a test, and only those two are replaced — by a shell function
/// `make`, defined before the README's blocks ("substitutions" below), which fails on anything else:
/// - `make run` would install packages and build again: it runs make run's recipe (`makeRunRecipe`,
///   checked against the Makefile) with its defaults — `testkit init` once, then `serve` on the
///   test store's config — in that directory (where `.build/release/iap-ledger` is the binary under
///   test), on a free port (`PORT=0`, serve's stand-in for `--port`) rather than 8080, and once
///   `/readyz` answers 200 it stops it with SIGINT, as Ctrl-C does.
/// - `make test` would build and run this suite again, this test among it: it does nothing.
@Suite(.serialized, .tags(.database, .slow)) struct ReadmeCommandsTests {
    enum Block: Equatable {
        case shell(String)
        case shown(language: String)
    }

    /// The fenced blocks of a markdown text, in order. A fence must start its line.
    static func blocks(of markdown: String) throws -> [Block] {
        var blocks: [Block] = []
        var open: (language: String, lines: [Substring])?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") && !line.hasPrefix("```") {
                throw OpsFailure("README.md: an indented fence, which this test would not see as one: \(line)")
            }
            guard line.hasPrefix("```") else {
                open?.lines.append(line)
                continue
            }
            if let block = open {
                guard line == "```" else { throw OpsFailure("README.md: a fence inside a block: \(line)") }
                blocks.append(
                    block.language == "sh"
                        ? .shell(block.lines.joined(separator: "\n")) : .shown(language: block.language))
                open = nil
            } else {
                open = (String(line.dropFirst(3)), [])
            }
        }
        if open != nil { throw OpsFailure("README.md: a block is never closed") }
        return blocks
    }

    /// Defined before the README's blocks: the two substitutions, and nothing else.
    static let substitutions = #"""
        set -eu -o pipefail
        make() {
            echo "make $*" >> "$README_SUBSTITUTED"
            case "$*" in
            run)
                .build/release/iap-ledger testkit init --data-dir ".iap-ledger" > make-run.out
                PORT=0 .build/release/iap-ledger serve --config ".iap-ledger/testkit/config.json" --data-dir ".iap-ledger" \
                    >> make-run.out &
                local pid=$! deadline=$((SECONDS + 120)) url=""
                until [ -n "$url" ] && curl -sf "$url/readyz" > /dev/null; do
                    if ! kill -0 $pid 2> /dev/null || [ $SECONDS -ge $deadline ]; then
                        echo "make run: serve did not become ready" >&2
                        return 1
                    fi
                    sleep 0.1
                    url=$(sed -n 's/^iap-ledger listening on //p' make-run.out)
                done
                cat make-run.out
                kill -INT $pid
                wait $pid
                ;;
            test) ;;
            *) echo "make $*: the README test has no substitution for it" >&2; return 97 ;;
            esac
        }

        """#

    /// The Makefile's `run` recipe, which the `make run` substitution above plays with the
    /// defaults RUN_DATA=.iap-ledger, CONFIG=$(RUN_DATA)/testkit/config.json and no ARGS.
    static let makeRunRecipe = [
        #"@if [ "$(CONFIG)" = "$(RUN_DATA)/testkit/config.json" ]; then .build/release/iap-ledger testkit init --data-dir "$(RUN_DATA)"; fi"#,
        #".build/release/iap-ledger serve --config "$(CONFIG)" --data-dir "$(RUN_DATA)" $(ARGS)"#,
    ]

    @Test func theMakeRunSubstitutionPlaysTheMakefilesRecipe() throws {
        let makefile = try String(contentsOfFile: OpsBinary.packageRoot + "/Makefile", encoding: .utf8)
        let lines = makefile.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("run:") }, "no run target in the Makefile")
        let recipe = lines[(start + 1)...].prefix { $0.hasPrefix("\t") }.map { String($0.dropFirst()) }
        #expect(recipe == Self.makeRunRecipe, "make run changed: update the README test's substitution")
        #expect(makefile.contains("RUN_DATA ?= .iap-ledger\nCONFIG ?= $(RUN_DATA)/testkit/config.json\n"))
    }

    @Test func theReadmeBlocksTakeTheTourToAWebhookAndTheConsole() throws {
        let readme = try String(contentsOfFile: OpsBinary.packageRoot + "/README.md", encoding: .utf8)
        let blocks = try Self.blocks(of: readme)
        let commands = blocks.compactMap { if case .shell(let text) = $0 { text } else { nil } }
        let shown = Set(blocks.compactMap { if case .shown(let language) = $0 { language } else { nil } })
        #expect(shown.isSubset(of: ["text", "json"]), "blocks that are neither run nor output: \(shown)")
        #expect(commands.count >= 2)

        let root = try OpsBinary.temporaryDirectory()
        let checkout = root + "/checkout"
        let data = root + "/data"
        let substituted = root + "/substituted"
        defer {
            Self.stop(using: data)
            Self.stop(using: checkout + "/.iap-ledger")
            try? FileManager.default.removeItem(atPath: root)
        }
        try FileManager.default.createDirectory(atPath: checkout + "/.build/release", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: checkout + "/.build/release/iap-ledger",
            withDestinationPath: OpsBinary.path)
        let script = Self.substitutions + commands.joined(separator: "\n") + "\n"
        try script.write(toFile: root + "/readme.sh", atomically: true, encoding: .utf8)

        var environment = OpsBinary.environment(["DATA": data, "README_SUBSTITUTED": substituted])
        environment["IAP_LEDGER_URL"] = nil
        environment["IAP_LEDGER_KEY"] = nil
        let shell = try OpsChild(
            [root + "/readme.sh"], environment: environment, executable: "/bin/bash",
            workingDirectory: checkout)
        guard let status = shell.wait(timeout: 300) else {
            shell.kill(SIGKILL)
            throw OpsFailure("the README's commands did not finish: \(shell.stdout)\n\(shell.stderr)")
        }
        let out = shell.stdout
        #expect(status == 0, "exit \(status)\nstdout:\n\(out)\nstderr:\n\(shell.stderr)")

        // Replaced: exactly make run and make test, in the README's order; nothing else.
        let replaced = (try? String(contentsOfFile: substituted, encoding: .utf8)) ?? ""
        #expect(replaced == "make run\nmake test\n", "\(replaced)")
        // make run served on its own data directory in the checkout, and Ctrl-C stopped it.
        #expect(FileManager.default.fileExists(atPath: checkout + "/.iap-ledger/pgdata/PG_VERSION"))
        #expect(Self.postmasterPID(checkout + "/.iap-ledger").map(opsProcessIsAlive) != true)

        // What each step promises, in the order of the steps.
        let expected = [
            "iap-ledger listening on http://127.0.0.1:",  // make run
            "created a test store in",
            #""transactionId":"2000000001","originalTransactionId":"2000000001","productId":"com.example.game.pro.monthly","result":"recorded""#,
            #"{"userId":"u-1","entitlements":{"pro":{"active":true"#,
            #""result":"recorded"}"#,  // the REFUND notification
            #"{"userId":"u-1","entitlements":{"pro":{"active":false"#,
            #""status":"revoked""#,
            #""productId":"com.example.game.coins100","result":"recorded""#,
            #"{"balance":70,"result":"debited"}"#,
            "dry run: replayed 8 events",
            // Under the recorded catalog: a replay run without --config changes nobody.
            "changed users: 0;",
            "nothing was changed (dry run)",
            #""type":"INITIAL_PURCHASE""#,  // the receiver's log, shown
            "console: http://127.0.0.1:",
        ]
        var rest = Substring(out)
        for fragment in expected {
            guard let found = rest.range(of: fragment) else {
                Issue.record("missing, in order: \(fragment)\nstdout:\n\(out)\nstderr:\n\(shell.stderr)")
                break
            }
            rest = rest[found.upperBound...]
        }

        // The receiver got one POST per change of the tour, u-1's in the order they happened.
        let received = try Self.receivedChanges(data + "/webhooks.log")
        #expect(
            received.map { $0["type"] as? String } == [
                "INITIAL_PURCHASE", "REFUND", "CONSUMABLE_PURCHASE", "BALANCE_DEBIT",
            ],
            "\(received)")
        #expect(received.allSatisfy { $0["userId"] as? String == "u-1" })
        #expect((received.first?["customer"] as? [String: Any])?["userId"] as? String == "u-1")
        #expect(Set(received.compactMap { $0["id"] as? String }).count == received.count)

        // The console answers at the URL the tour printed, with the page itself.
        let line = out.split(separator: "\n").last { $0.hasPrefix("console: ") }
        let consoleURL = line.flatMap { $0.dropFirst("console: ".count).split(separator: " ").first }.map(String.init)
        let listening = try String(contentsOfFile: data + "/serve.out", encoding: .utf8)
        let serveURL = listening.split(separator: "\n").first { $0.hasPrefix("iap-ledger listening on ") }
            .map { String($0.dropFirst("iap-ledger listening on ".count)) }
        #expect(consoleURL != nil && consoleURL == serveURL.map { $0 + "/console" }, "\(String(describing: line))")
        let port = Int(serveURL?.split(separator: ":").last ?? "") ?? 0
        let console = try OpsHTTP.get(port: port, "/console")
        #expect(console.status == 200)
        #expect(console.headers["content-type"]?.hasPrefix("text/html") == true, "\(console.headers)")
        #expect(console.body.contains("<html"), "\(console.body.prefix(200))")

        // The tour leaves the service and the receiver running, as a reader would: stopping the
        // service stops its PostgreSQL.
        #expect(!Self.servePIDs(using: data).isEmpty)
        Self.stop(using: data)
        #expect(Self.servePIDs(using: data).isEmpty)
        try eventually("Self.postmasterPID(data).map(opsProcessIsAlive) != true", within: 10) {
            Self.postmasterPID(data).map(opsProcessIsAlive) != true
        }
        try eventually("Self.receiverPIDs(using: data).isEmpty", within: 10) { Self.receiverPIDs(using: data).isEmpty }
        #expect(!shell.stderr.contains("level=error"), "\(shell.stderr)")
    }

    /// The webhook bodies the tour's receiver logged, one JSON object a line; polled until the
    /// four changes of the tour are there (the tour itself already waited for the last).
    static func receivedChanges(_ log: String) throws -> [[String: Any]] {
        var lines: [Substring] = []
        try? eventually(
            "the receiver's log to hold four changes",
            within: 30
        ) {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            lines = text.split(separator: "\n")
            return lines.count >= 4
        }
        return try lines.map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw OpsFailure("not a JSON object: \(line)")
            }
            return object
        }
    }

    /// Stops what the README left running on `directory`: `serve` (by SIGTERM, which stops its
    /// PostgreSQL), then the webhook receiver (by SIGKILL: it inherits the test process's signal
    /// mask, in which SIGTERM is blocked, and holds nothing worth a clean exit).
    static func stop(using directory: String) {
        for pid in servePIDs(using: directory) { kill(pid, SIGTERM) }
        try? eventually("servePIDs(using: directory).isEmpty", within: 30) { servePIDs(using: directory).isEmpty }
        try? eventually("postmasterPID(directory).map(opsProcessIsAlive) != true", within: 10) {
            postmasterPID(directory).map(opsProcessIsAlive) != true
        }
        for pid in receiverPIDs(using: directory) { kill(pid, SIGKILL) }
    }

    /// The tour's webhook receiver, `python3 - <data>`.
    static func receiverPIDs(using directory: String) -> [Int32] {
        processes { _, argv in argv.first?.hasSuffix("python3") == true && argv.contains(directory) }
    }

    /// `iap-ledger serve … --data-dir <directory>` processes, or without `--data-dir` (make run's)
    /// in the directory holding `<directory>`, when it is a `.iap-ledger`.
    static func servePIDs(using directory: String) -> [Int32] {
        processes { pid, argv in
            guard argv.count > 1, argv[0].hasSuffix("iap-ledger"), argv[1] == "serve" else { return false }
            if argv.contains(directory) { return true }
            let cwd = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd")
            return !argv.contains("--data-dir") && cwd.map { $0 + "/.iap-ledger" } == directory
        }
    }

    static func processes(where matches: (Int32, [String]) -> Bool) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard opsProcessIsAlive(pid), let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline")
            else { return false }
            return matches(pid, bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) })
        }
    }

    static func postmasterPID(_ data: String) -> Int32? {
        guard let text = try? String(contentsOfFile: data + "/pgdata/postmaster.pid", encoding: .utf8),
            let first = text.split(separator: "\n").first
        else { return nil }
        return Int32(first)
    }
}
