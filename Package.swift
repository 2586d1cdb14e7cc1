// swift-tools-version: 6.0
import PackageDescription

// No outside Swift package: everything Swift lacks comes from Debian's C libraries
// through systemLibrary targets, each owned by exactly one Swift target (TestStore's test CA alone
// also calls OpenSSL, to build certificates no production code builds).
let package = Package(
    name: "iap-ledger",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "iap-ledger", targets: ["iap-ledger"]),
        .executable(name: "iap-ledger-bench", targets: ["Benchmarks"]),
    ],
    targets: [
        // C libraries (thin shims: macros and variadics Swift cannot call).
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // Pure Swift, no dependencies: a fast JSON reader and writer shared by every layer.
        .target(name: "JSON"),
        // Pure Swift, no dependencies: the command line's one argument parser, shared by the
        // service's commands and the test store's (which cannot import Service).
        .target(name: "Arguments"),
        // Pure Swift, no dependencies: how a failed system call's errno is read and worded, once.
        .target(name: "SystemCalls"),
        // The pure domain: events in, state out, time passed in as a value.
        .target(name: "Ledger", dependencies: ["JSON"]),
        // Adapters. They never import each other.
        .target(name: "AppStore", dependencies: ["COpenSSL", "JSON"]),
        .target(name: "EventStore", dependencies: ["CLibPQ", "SystemCalls"]),
        // HTTP in and out: libmicrohttpd serves, libcurl's multi interface posts (webhooks).
        .target(name: "HTTP", dependencies: ["CMicroHTTPD", "CCurl", "JSON", "SystemCalls"]),
        // The schema: migrations/*.sql compiled in (scripts/embed-migrations), so the binary alone
        // runs every command and never reads a .sql file.
        .target(name: "Schema", dependencies: ["EventStore"]),
        // The operator console (api.md §6): its HTML, CSS and JavaScript are real files under
        // Sources/Console/Resources, compiled into the binary as byte arrays (embedInCode), so the
        // binary still runs alone with no resource bundle beside it. Its routes need only HTTP.
        .target(name: "Console", dependencies: ["HTTP"], resources: [.embedInCode("Resources")]),
        // What every room stands on, in layers (docs/architecture.md): configuration,
        // errors, jobs, leases and lifecycle (Shared/), the log as the Ledger reads and writes it
        // (EventLog/), the routes' shared rules (Routing/), API keys (Auth/), the projections'
        // tables and documents (Projections/), the catalog in force (Catalog/), the analytics
        // overview (Analytics/), the change feed's rows and writer, which every write path calls
        // (ChangeFeed/), and the shell every use case runs in (UnitOfWork/). A target so the
        // compiler keeps its arrows pointing down: nothing here can name a use case, a route or
        // the composition root.
        .target(
            name: "Infrastructure",
            dependencies: ["Ledger", "AppStore", "EventStore", "HTTP", "JSON", "SystemCalls"]),
        // The rooms that stand alone, each a target so the compiler keeps its arrows one way
        // (docs/architecture.md, "The rooms"): the change feed's upper half and webhooks.
        .target(
            name: "Changes",
            dependencies: ["Infrastructure", "Ledger", "AppStore", "EventStore", "HTTP", "JSON"]),
        // Who a user is (api.md §7): tokens, aliases, Apple Accounts, lookups, erasure (which
        // erases a person's webhook deliveries too, hence Changes below it).
        .target(
            name: "Identity",
            dependencies: ["Infrastructure", "Changes", "Ledger", "AppStore", "EventStore", "HTTP", "JSON"]),
        // Recording Apple's facts: verification, fact mapping, the IngestPlanner, group commit.
        .target(
            name: "Ingest",
            dependencies: [
                "Infrastructure", "Identity", "Ledger", "AppStore", "EventStore", "HTTP", "JSON", "SystemCalls",
            ]),
        // The read use cases, the document cache and the check that keeps it exact.
        .target(
            name: "Reads",
            dependencies: [
                "Infrastructure", "Identity", "Ledger", "AppStore", "EventStore", "HTTP", "JSON", "SystemCalls",
            ]),
        // Every rebuild from the log: the replay engine, the start-up rebuild, a catalog change.
        .target(
            name: "Replay",
            dependencies: [
                "Infrastructure", "Identity", "Ledger", "AppStore", "EventStore", "HTTP", "JSON", "SystemCalls",
            ]),
        // What asks Apple's App Store Server API (sync, reconcile, extend, tokens, consumption and
        // retention answers); what Apple answers is recorded through Ingest.
        .target(
            name: "AppleAPI",
            dependencies: [
                "Infrastructure", "Identity", "Ingest", "Reads", "Ledger", "AppStore", "EventStore", "HTTP", "JSON",
            ]),
        // The composition root and the routes that call several rooms (with the two small account
        // rooms, Balances and Grants): the target that wires the others together.
        .target(
            name: "Service",
            dependencies: [
                "Infrastructure", "Changes", "Identity", "Ingest", "Reads", "Replay", "AppleAPI", "Ledger", "AppStore",
                "EventStore", "HTTP", "JSON", "Schema", "SystemCalls", "Console", "Arguments",
            ]),
        // The command line: dispatch, the one settings loader, one file per command (serve starts
        // Service's composition root).
        .target(
            name: "CLI",
            dependencies: [
                "Service", "Infrastructure", "Identity", "Replay", "AppleAPI", "AppStore", "EventStore", "JSON",
                "Schema", "SystemCalls", "Arguments",
            ]),
        // The test store (`iap-ledger testkit`, docs/testkit.md): Apple's side for local testing —
        // the test CA, the verifyReceipt and Server API stand-ins — and the commands that mint and
        // serve with them. Production code never imports it; it reads the service's configuration
        // through a loader the executable hands it. Its CA builds certificates with OpenSSL's
        // X509 API, through AppStore's package-level helpers.
        .target(
            name: "TestStore",
            dependencies: ["AppStore", "Arguments", "COpenSSL", "HTTP", "JSON", "SystemCalls"]),
        // The composition of the two command sets: the CLI's commands and TestStore's `testkit`.
        .executableTarget(name: "iap-ledger", dependencies: ["CLI", "Infrastructure", "TestStore", "Arguments"]),

        // Shared by the test targets and the benchmarks: a private PostgreSQL per test run, signed
        // App Store vectors minted with the test PKI, one seeded generator and one HTTP test client,
        // and Apple's Server API served over the HTTP target's server.
        // It never imports Service: the service's tests build on it, not the other way round.
        .target(
            name: "TestSupport",
            dependencies: ["EventStore", "AppStore", "Ledger", "JSON", "Schema", "SystemCalls", "HTTP", "TestStore"]),
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "Service", "Infrastructure", "TestSupport", "Ledger", "AppStore", "EventStore", "HTTP", "JSON",
                "Schema",
            ]),

        .testTarget(name: "JSONTests", dependencies: ["JSON", "TestSupport"]),
        .testTarget(name: "LedgerTests", dependencies: ["Ledger", "JSON", "TestSupport"]),
        .testTarget(name: "AppStoreTests", dependencies: ["AppStore", "TestSupport", "JSON", "TestStore"]),
        .testTarget(name: "EventStoreTests", dependencies: ["EventStore", "Schema", "TestSupport"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "JSON", "TestSupport"]),
        .testTarget(name: "ConsoleTests", dependencies: ["Console", "HTTP"]),
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                "Service", "CLI", "Infrastructure", "Changes", "Identity", "Ingest", "Reads", "Replay", "AppleAPI",
                "TestSupport", "Ledger", "AppStore", "EventStore", "HTTP", "JSON", "Schema", "Console", "TestStore",
                "SystemCalls",
            ]),
    ]
)
