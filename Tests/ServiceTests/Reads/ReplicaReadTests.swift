import EventStore
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// History reads on a real streaming replica (`DATABASE_READ_URL`): never less than the caller's
/// own acknowledged write, served by the replica when it keeps up, by the primary when it does
/// not or is gone; analysts' schema and role work there. Serialized: one test pauses replay.
@Suite(.serialized, .tags(.database, .cluster, .slow)) final class ReplicaReadTests {
    /// One private primary and its standby for the suite; each test has its own database on it.
    static let shared: Result<(primary: EmbeddedPostgres, replica: StreamingReplica), any Error> = Result {
        let primary = try StreamingReplica.startPrimary()
        return (primary, try StreamingReplica.start(of: primary))
    }
    static let databases = Atomic<Int>(0)

    /// A service on a fresh database of the primary, reading history from `replica`.
    final class ReplicaService {
        let app: ServiceApp
        let log = LogCapture()
        let primaryConninfo: String
        let replicaConninfo: String
        let keys: [String: String]

        init(primary: EmbeddedPostgres, replica: StreamingReplica, waitMillis: Int = 100, readURL: Bool = true) throws {
            let name = "replica_\(ReplicaReadTests.databases.add(1, ordering: .relaxed).newValue)"
            try primary.createDatabase(name)
            primaryConninfo = primary.connectionString(database: name)
            replicaConninfo = replica.connectionString(database: name)
            var options = ServiceApp.Options()
            options.configuration = TestService.configuration()
            options.databaseURL = primaryConninfo
            options.databaseReadURL = readURL ? replicaConninfo : nil
            options.replicaWaitMillis = waitMillis
            options.port = 0
            options.threads = 4
            options.logger = log.logger
            app = try ServiceApp.start(options)
            let admin = try Connection(primaryConninfo)
            keys = ["all": try APIKeys().create(name: "replica-all", scopes: ["read", "write", "admin"], on: admin)]
            // The database, its migrations and the key reach the standby before any test reads.
            try replica.waitUntilReplayed()
        }

        func client() -> ServiceHTTPClient { ServiceHTTPClient(port: app.port, apiKey: keys["all"]) }

        /// `iap_replica_reads_total{result=…}` as /metrics says now.
        func replicaReads(_ result: String) throws -> Int {
            let text = try client().get("/metrics").text
            let prefix = "iap_replica_reads_total{result=\"\(result)\"} "
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }),
                let value = Double(line.dropFirst(prefix.count))
            else { throw Failure(description: "no \(prefix) in /metrics") }
            return Int(value)
        }

        func stop() { app.stop() }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func cluster() throws -> (primary: EmbeddedPostgres, replica: StreamingReplica) { try shared.get() }

    /// A monthly subscription bought an hour ago, signed.
    static func purchase(_ transactionId: String, now: Int64) -> String {
        Mint.signed(
            Mint.transaction(
                transactionId, product: TestService.monthly, purchase: now - hour, expires: now + day,
                signed: now - hour))
    }

    @Test func aPurchaseIsAtOnceInEveryHistoryReadThroughTheReplica() throws {
        let (primary, replica) = try Self.cluster()
        let service = try ReplicaService(primary: primary, replica: replica)
        defer { service.stop() }
        let writer = service.client()
        let reader = service.client()
        let now = Timestamp.nowMillis()
        for index in 0..<120 {
            let user = "u-own-\(index)"
            let transactionId = "\(5_200_000 + index)"
            #expect(try writer.purchase(user, Self.purchase(transactionId, now: now)).status == 200)
            // Straight after the acknowledgement, on another connection: the user's events and the
            // chain show it, and the change feed soon after.
            let events = try reader.get("/v1/users/\(user)/events")
            #expect(events.status == 200)
            #expect(events.json["events"]?.arrayValue?.isEmpty == false, "events of \(user) lack the purchase")
            #expect(events.text.contains(transactionId))
            let chain = try reader.get("/v1/subscriptions/\(transactionId)")
            #expect(chain.status == 200, "subscription \(transactionId): \(chain.status)")
            // The feed serves a change once every older transaction has finished (its xid horizon,
            // api.md §4): a background job's transaction open at that moment holds it back for a
            // moment, on the primary as on the replica. So: shown within a bound, not at once.
            var feed = try reader.get("/v1/changes?userId=\(user)")
            try eventually("the change feed of \(user) lacks its purchase: \(feed.text)", within: 10) {
                feed = (try? reader.get("/v1/changes?userId=\(user)")) ?? feed
                return feed.json["changes"]?.arrayValue?.contains { $0["type"]?.stringValue == "INITIAL_PURCHASE" }
                    == true
            }
        }
        // The replica really answered (most of) them.
        #expect(try service.replicaReads("replica") > 0)
        #expect(try reader.get("/metrics").text.contains("iap_replica_replay_lag_bytes "))
    }

    @Test func aReplicaThatStopsReplayingLeavesTheReadToThePrimaryWithTheWrite() throws {
        let (primary, replica) = try Self.cluster()
        let service = try ReplicaService(primary: primary, replica: replica)
        defer { service.stop() }
        let api = service.client()
        let now = Timestamp.nowMillis()
        #expect(try api.purchase("u-before", Self.purchase("5300001", now: now)).status == 200)
        #expect(try api.get("/v1/users/u-before/events").text.contains("5300001"))

        try replica.pauseReplay()
        let resumed = Mutex(false)
        defer { if !resumed.withLock({ $0 }) { try? replica.resumeReplay() } }
        let (servedBefore, fellBackBefore) = (try service.replicaReads("replica"), try service.replicaReads("fallback"))
        #expect(try api.purchase("u-paused", Self.purchase("5300002", now: now)).status == 200)
        let events = try api.get("/v1/users/u-paused/events")
        #expect(events.status == 200)
        #expect(events.text.contains("5300002"), "the primary must answer what the paused replica lacks")
        let asOf = try api.get("/v1/users/u-paused?asOf=" + RFC3339.format(Timestamp.nowMillis() + 1000))
        #expect(asOf.json["entitlements"]?["pro"]?["active"]?.boolValue == true, "asOf: \(asOf.text)")
        #expect(try service.replicaReads("replica") == servedBefore)
        #expect(try service.replicaReads("fallback") >= fellBackBefore + 2)
        // The paused replica itself does not have it: the fallback was needed.
        let standby = try Connection(service.replicaConninfo)
        #expect(
            try standby.query("SELECT count(*) FROM es.events WHERE data->>'originalTransactionId' = '5300002'")[0, 0]
                == "0")

        try replica.resumeReplay()
        resumed.withLock { $0 = true }
        try replica.waitUntilReplayed()
        var served = false
        for _ in 0..<50 where !served {
            #expect(try api.get("/v1/users/u-paused/events").text.contains("5300002"))
            served = try service.replicaReads("replica") > servedBefore
        }
        #expect(served, "after resuming, the replica serves again")
    }

    @Test func analystsReadTheAnalyticsSchemaOnTheReplica() throws {
        let (primary, replica) = try Self.cluster()
        let service = try ReplicaService(primary: primary, replica: replica)
        defer { service.stop() }
        #expect(
            try service.client().purchase("u-analyst", Self.purchase("5400001", now: Timestamp.nowMillis())).status
                == 200)
        let standby = try Connection(service.replicaConninfo)
        try standby.executeScript("SET ROLE iap_analyst")
        let started = Date()
        var rows = ""
        // The projector runs every 250 ms and the replica replays in milliseconds: normally well
        // under a second; the bound is loose for a loaded 2-core machine.
        try? eventually("the purchase on the replica's analytics.transactions", within: 30, every: 0.05) {
            rows =
                try standby.query("SELECT count(*) FROM analytics.transactions WHERE transaction_id = '5400001'")[0, 0]
                ?? ""
            return rows == "1"
        }
        #expect(rows == "1", "the purchase did not reach analytics.transactions on the replica")
        #expect(
            Date().timeIntervalSince(started) < 20,
            "analytics took \(Date().timeIntervalSince(started)) s to reach the replica")
        #expect(
            try standby.query(
                "SELECT status FROM analytics.subscriptions WHERE user_id = 'u-analyst'")[0, 0] == "active")
        // The same role, the same limits as on the primary: no event log, and read-only anyway.
        #expect(throws: DatabaseError.self) { _ = try standby.query("SELECT * FROM es.events LIMIT 1") }
    }

    @Test func aStoppedReplicaLeavesEveryReadToThePrimary() throws {
        let (primary, _) = try Self.cluster()
        let own = try StreamingReplica.start(of: primary)
        defer { own.stop() }
        let service = try ReplicaService(primary: primary, replica: own)
        defer { service.stop() }
        let api = service.client()
        let now = Timestamp.nowMillis()
        #expect(try api.purchase("u-up", Self.purchase("5500001", now: now)).status == 200)
        #expect(try api.get("/v1/users/u-up/events").text.contains("5500001"))

        own.stop()
        let fellBack = try service.replicaReads("fallback")
        #expect(try api.purchase("u-down", Self.purchase("5500002", now: now)).status == 200)
        let events = try api.get("/v1/users/u-down/events")
        #expect(events.status == 200)
        #expect(events.text.contains("5500002"))
        #expect(try api.get("/v1/subscriptions/5500002").status == 200)
        #expect(try api.get("/v1/changes?userId=u-down").json["changes"]?.arrayValue?.count == 1)
        #expect(try service.replicaReads("fallback") >= fellBack + 3)
        #expect(try api.get("/readyz").status == 200, "the replica is optional: the service stays ready")
        #expect(service.log.text.contains("replica unavailable"))
    }

    @Test func serveTakesTheReplicaFromTheEnvironmentAndRefusesABadWait() throws {
        let (primary, replica) = try Self.cluster()
        let name = "replica_serve_\(Self.databases.add(1, ordering: .relaxed).newValue)"
        try primary.createDatabase(name)
        try replica.waitUntilReplayed()
        let environment = [
            "DATABASE_URL": primary.connectionString(database: name), "PORT": "0",
            "DATABASE_READ_URL": replica.connectionString(database: name), "IAP_LEDGER_REPLICA_WAIT_MS": "50",
        ]
        let serve = try OpsServe([], environment: environment)
        let metrics = try OpsHTTP.get(port: serve.port, "/metrics").body
        #expect(metrics.contains("iap_replica_reads_total{result=\"replica\"} 0"))
        #expect(metrics.contains("iap_replica_replay_lag_bytes "))
        #expect(serve.stop() == 0)

        var bad = environment
        bad["IAP_LEDGER_REPLICA_WAIT_MS"] = "soon"
        let refused = try OpsBinary.run(["serve"], environment: bad)
        #expect(refused.status == 2)
        #expect(refused.stderrLines.count == 1, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("IAP_LEDGER_REPLICA_WAIT_MS must be 0…10000, got \"soon\""), "\(refused.stderr)")
    }

    @Test func aPositionIsFetchedAfterTheReadBeganAndSharedByTheReadersWaiting() throws {
        // A fetch answers the clock's value when it starts, then makes the round trip to the
        // primary that a real one makes; each caller ticks the clock first.
        let primary = try Connection(try Self.cluster().primary.connectionString())
        let clock = Atomic<UInt64>(0)
        let fetches = Atomic<Int>(0)
        let position = PrimaryWALPosition { () throws(DatabaseError) -> WALPosition in
            fetches.add(1, ordering: .relaxed)
            let value = clock.load(ordering: .sequentiallyConsistent)
            _ = try primary.query("SELECT pg_current_wal_insert_lsn()")
            return WALPosition(offset: value)
        }
        let calls = 8 * 200
        let stale = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        onThreads(8) { _ in
            for _ in 0..<200 {
                let began = clock.add(1, ordering: .sequentiallyConsistent).newValue
                do {
                    if try position.current().offset < began { stale.add(1, ordering: .relaxed) }
                } catch {
                    failed.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(failed.load(ordering: .relaxed) == 0, "round trips to the primary failed")
        #expect(stale.load(ordering: .relaxed) == 0, "a position older than its read")
        #expect(fetches.load(ordering: .relaxed) < calls, "concurrent readers share fetches")
    }

    @Test func walPositionsReadAsPostgreSQLSpellsThemAndStepBackOverPageHeaders() {
        #expect(WALPosition("16/B374D848")?.offset == 0x16_B374_D848)
        #expect(WALPosition("16/B374D848")?.description == "16/B374D848")
        #expect(WALPosition("0/0")?.offset == 0)
        for bad in ["", "16", "16/", "/1", "x/1", "1/2/3", "100000000/0"] { #expect(WALPosition(bad) == nil, "\(bad)") }
        let layout = WALLayout(blockSize: 8192, segmentSize: 16 << 20)
        // After a short page header (mid-segment page) and a long one (segment start).
        #expect(layout.recordEnd(ofInsertPosition: WALPosition(offset: 3 * 8192 + 24)).offset == 3 * 8192)
        #expect(layout.recordEnd(ofInsertPosition: WALPosition(offset: (16 << 20) + 40)).offset == 16 << 20)
        #expect(layout.recordEnd(ofInsertPosition: WALPosition(offset: 3 * 8192 + 40)).offset == 3 * 8192 + 40)
        #expect(layout.recordEnd(ofInsertPosition: WALPosition(offset: 3 * 8192 + 64)).offset == 3 * 8192 + 64)
    }
}
