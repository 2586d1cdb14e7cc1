import Foundation
import Glibc
import TestSupport
import Testing

/// Every operator mistake ends the same way: ONE line on stderr naming the cause (and the file
/// and key for a config mistake), a non-zero exit, and never a stack trace.
@Suite(.tags(.database)) struct CLIBadInputTests {
    static let validApp = #"{"bundleId": "com.example", "appAppleId": 1234, "environments": ["Sandbox"]}"#

    /// Config text (nil = no file written) → words the one error line must contain.
    static let configurations: [(name: String, text: String, expected: [String])] = [
        ("bad-json", #"{"apps": [}"#, ["bad JSON"]),
        ("unknown-key", #"{"apps": [], "colour": "blue"}"#, ["colour", "unknown key"]),
        (
            "wrong-type", #"{"apps": [{"bundleId": "com.example", "appAppleId": "1234"}]}"#,
            ["apps[0].appAppleId", "positive integer"]
        ),
        (
            "unknown-product-type",
            #"{"apps": [{"bundleId": "com.example", "appAppleId": 1, "products": {"p1": {"type": "gadget"}}}]}"#,
            ["apps[0].products.p1.type", "unknown product type \"gadget\""]
        ),
        ("unreadable-root", #"{"trustedRoots": ["missing/root.der"]}"#, ["trustedRoots[0]", "missing/root.der"]),
        (
            "production-without-app-id", #"{"apps": [{"bundleId": "com.example", "environments": ["Production"]}]}"#,
            ["apps[0].appAppleId", "Production"]
        ),
        ("bad-policy", #"{"transferPolicy": "steal"}"#, ["transferPolicy", "steal"]),
        ("not-an-object", #"[1, 2]"#, ["expected an object"]),
        (
            "webhook-without-secret", #"{"webhooks": [{"name": "b", "url": "https://h.example/x"}]}"#,
            ["webhooks[0].secret", "is required"]
        ),
        (
            "webhook-secret-not-base64",
            #"{"webhooks": [{"name": "b", "url": "https://h.example/x", "secret": "whsec_%%%"}]}"#,
            ["webhooks[0].secret", "not base64"]
        ),
        (
            "webhook-bad-url",
            #"{"webhooks": [{"name": "b", "url": "h.example/x", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}]}"#,
            ["webhooks[0].url", "http(s) URL"]
        ),
        (
            "webhook-unknown-type",
            #"{"webhooks": [{"name": "b", "url": "https://h.example/x", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "types": ["RENEW"]}]}"#,
            ["webhooks[0].types[0]", "unknown change type"]
        ),
    ]

    @Test(arguments: configurations.indices)
    func aBadConfigurationStopsStartUpWithOneLineNamingTheFileAndKey(index: Int) throws {
        let (name, text, expected) = Self.configurations[index]
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = "\(root)/\(name).json"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        // No database is touched: the config is validated first.
        let outcome = try OpsBinary.run(["serve", "--port", "0", "--config", file, "--data-dir", root + "/data"])
        Self.expectOneLineFailure(outcome, containing: [file] + expected)
        #expect(!FileManager.default.fileExists(atPath: root + "/data"), "nothing started before validation")
    }

    @Test func theConfigVariableStandsInForTheFlag() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/env.json"
        try #"{"apps": 3}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let outcome = try OpsBinary.run(
            ["serve", "--data-dir", root + "/data"], environment: ["IAP_LEDGER_CONFIG": file])
        Self.expectOneLineFailure(outcome, containing: [file, "apps", "expected an array"])
        // And verify reads it the same way.
        let verify = try OpsBinary.run(["verify", "-"], environment: ["IAP_LEDGER_CONFIG": file])
        Self.expectOneLineFailure(verify, containing: [file, "apps"])
    }

    @Test func aMissingConfigFileIsNamed() throws {
        let outcome = try OpsBinary.run(["serve", "--config", "/nonexistent/iap.json"])
        Self.expectOneLineFailure(outcome, containing: ["/nonexistent/iap.json", "cannot read"])
    }

    @Test func anUnusableDataDirectoryIsNamed() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // A path under a regular file.
        try "x".write(toFile: root + "/file", atomically: true, encoding: .utf8)
        let underFile = try OpsBinary.run(["serve", "--data-dir", root + "/file"])
        Self.expectOneLineFailure(underFile, containing: [root + "/file", "not a directory"])
        // A directory that cannot be created.
        let impossible = try OpsBinary.run(["serve", "--data-dir", "/proc/iap-ledger-data"])
        Self.expectOneLineFailure(impossible, containing: ["/proc/iap-ledger-data", "cannot create data directory"])
        // A directory the server's OS user cannot write (as root, PostgreSQL runs as `postgres`;
        // otherwise the directory is made unreadable for us).
        mkdir(root + "/private", 0o700)
        if geteuid() == 0 {
            let locked = try OpsBinary.run(["serve", "--data-dir", root + "/private/data"])
            Self.expectOneLineFailure(locked, containing: [root + "/private/data", "not writable"])
        } else {
            chmod(root + "/private", 0o000)
            defer { chmod(root + "/private", 0o700) }
            let locked = try OpsBinary.run(["serve", "--data-dir", root + "/private/data"])
            Self.expectOneLineFailure(locked, containing: [root + "/private"])
        }
    }

    @Test func aPortInUseIsNamed() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let (fd, port) = try Self.listeningSocket()
        defer { close(fd) }
        let outcome = try OpsBinary.run(["serve", "--port", String(port)], environment: ["DATABASE_URL": conninfo])
        Self.expectOneLineFailure(outcome, containing: [String(port), "in use"])
    }

    @Test func postgreSQLUnreachableIsNamed() throws {
        let outcome = try OpsBinary.run(
            ["serve", "--port", "0"], environment: ["DATABASE_URL": "host=127.0.0.1 port=1 dbname=x connect_timeout=3"])
        Self.expectOneLineFailure(outcome, containing: ["cannot connect to PostgreSQL", "port 1"])
        // The line saying which database, then the one line of the failure.
        let keys = try OpsBinary.run(
            ["keys", "list"], environment: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x"])
        #expect(keys.stderrLines.first == "iap-ledger: using DATABASE_URL x on 127.0.0.1:1 (user nobody)")
        #expect(keys.status == 1)
        #expect(keys.stderrLines.count == 2, "\(keys.stderr)")
        #expect(keys.stderrLines.last?.contains("127.0.0.1") == true, "\(keys.stderr)")
        Self.expectNoCrash(keys)
    }

    @Test(arguments: [
        (["serve", "--port", "http"], "--port must be 0…65535, got \"http\""),
        (["serve", "--port", "70000"], "--port must be 0…65535"),
        (["serve", "--port"], "--port needs a value"),
        (["serve", "--threads", "0"], "--threads must be 1…256"),
        (["serve", "--verbose"], "unknown option --verbose"),
        (["serve", "--help=yes"], "--help takes no value"),
        (["migrate", "--port", "1"], "unknown option --port"),
        (["keys", "create", "--name", "a"], "keys create needs --name and --scopes"),
        (["keys", "create", "--name", "a", "--scopes", "read,fly"], "invalid scopes \"read,fly\""),
        (["keys", "create", "--name", "a", "--scopes", ""], "invalid scopes"),
        (["keys", "revoke"], "keys revoke needs the key's name"),
        (["keys", "rotate"], "unknown keys subcommand \"rotate\""),
        (["keys", "list", "extra"], "keys list takes no argument"),
        (["psql", "--role", "admin"], "--role must be iap_analyst or iap_ledger_service, got \"admin\""),
        (["psql", "--user", "x"], "unknown option --user"),
        (["verify", "--kind", "receipt", "/dev/null"], "--kind must be"),
        (["deploy"], "unknown command \"deploy\""),
    ])
    func aBadArgumentIsNamed(arguments: [String], expected: String) throws {
        let outcome = try OpsBinary.run(arguments)
        #expect(outcome.status == 2, "\(arguments): \(outcome.stderr)")
        #expect(outcome.stderr.contains(expected), "\(arguments): \(outcome.stderr)")
        #expect(outcome.stdout.isEmpty)
        Self.expectNoCrash(outcome)
        if arguments != ["deploy"] {  // an unknown command is followed by the usage text
            #expect(outcome.stderrLines.count == 1, "\(arguments): \(outcome.stderr)")
        }
    }

    @Test func aBadPORTVariableIsNamedAsSuch() throws {
        let outcome = try OpsBinary.run(["serve"], environment: ["PORT": "eighty"])
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("PORT must be 0…65535, got \"eighty\""), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("--port must"))
    }

    @Test(arguments: [
        ("IAP_LEDGER_INGEST_COMMITTERS", "many", "IAP_LEDGER_INGEST_COMMITTERS must be 0…64, got \"many\""),
        ("IAP_LEDGER_INGEST_COMMITTERS", "65", "IAP_LEDGER_INGEST_COMMITTERS must be 0…64, got \"65\""),
        ("IAP_LEDGER_INGEST_BATCH_MAX", "0", "IAP_LEDGER_INGEST_BATCH_MAX must be 1…64, got \"0\""),
    ])
    func aBadGroupCommitVariableIsNamed(_ name: String, _ value: String, _ message: String) throws {
        let outcome = try OpsBinary.run(["serve"], environment: [name: value])
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains(message), "\(outcome.stderr)")
        #expect(outcome.stderrLines.count == 1, "\(outcome.stderr)")
    }

    // MARK: - helpers

    static func expectOneLineFailure(
        _ outcome: OpsBinary.Outcome, containing words: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(outcome.status != 0, "exit status", sourceLocation: sourceLocation)
        #expect(outcome.stderrLines.count == 1, "stderr: \(outcome.stderr)", sourceLocation: sourceLocation)
        for word in words {
            #expect(
                outcome.stderr.contains(word), "\"\(word)\" missing from: \(outcome.stderr)",
                sourceLocation: sourceLocation)
        }
        expectNoCrash(outcome, sourceLocation: sourceLocation)
    }

    static func expectNoCrash(_ outcome: OpsBinary.Outcome, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcome.status < 128, "killed by a signal: \(outcome.stderr)", sourceLocation: sourceLocation)
        for marker in ["Fatal error", "Stack dump", "backtrace", "Thread 0", "💣"] {
            #expect(!outcome.stderr.contains(marker), "\(outcome.stderr)", sourceLocation: sourceLocation)
        }
    }

    /// A socket listening on a free loopback port, held by this process.
    static func listeningSocket() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 4) == 0 else { throw OpsFailure("bind/listen: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
