import EventStore
import Foundation
import Glibc
import JSON
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Rolling upgrades (issue 16, deliverable 3): instances left on older code than the database's
/// projection version stop writing with their old rules and stop serving documents rendered by
/// them, go unready, and serve again once the versions agree. "Newer code" is simulated the way a
/// newer instance's rebuild leaves the database: a higher version recorded for the projection.
/// (The catalog reaching every running instance: CatalogInForceTests.aRunningInstanceSwitchesWithinASecond.)
@Suite(.serialized, .tags(.database, .slow)) struct RollingUpgradeTests {
    static let users = ProjectionVersions.users

    /// Records `version` for `users` the way a rebuild's swap does.
    static func recordUsers(_ version: Int, _ conninfo: String) throws {
        try ProjectionVersions.record(
            ProjectionVersions.Definition(name: users.name, version: version, inline: true), position: .start,
            on: Connection(conninfo))
    }

    static func builtUsers(_ conninfo: String) throws -> Int? {
        try ProjectionVersions.built(on: Connection(conninfo))[users.name]
    }

    static func eventCount(_ conninfo: String) throws -> Int64 {
        try Connection(conninfo).query("SELECT count(*) AS n FROM es.events").int64(0, "n") ?? -1
    }

    static func readyz(_ service: TestService) throws -> ServiceHTTPClient.Response {
        try service.client(nil).get("/readyz")
    }

    /// Waits (bounded) until `service`'s /readyz answers `status`; answers the last response.
    @discardableResult
    static func awaitReadiness(_ service: TestService, _ status: Int) throws -> ServiceHTTPClient.Response {
        var response = try readyz(service)
        try? eventually("/readyz to answer \(status)", within: 10) {
            response = try readyz(service)
            return response.status == status
        }
        return response
    }

    static func purchase(_ service: TestService, _ user: String, _ id: String) throws -> ServiceHTTPClient.Response {
        let now = service.clock.now
        return try service.client().purchase(
            user,
            Mint.signed(
                Mint.transaction(
                    id, product: TestService.monthly, purchase: now - hour, expires: now + 20 * day, signed: now - hour)
            ))
    }

    /// The 503 every refused request gets: the stable code and a detail naming the projection and both versions.
    static func expectAhead(_ response: ServiceHTTPClient.Response, database: Int, _ context: String) {
        #expect(response.status == 503, "\(context): \(response.status) \(response.text)")
        #expect(response.headers["content-type"] == "application/problem+json", "\(context)")
        #expect(response.json["code"]?.stringValue == "projection_version_ahead", "\(context): \(response.text)")
        #expect(response.json["projection"]?.stringValue == users.name, "\(context)")
        #expect(response.json["databaseVersion"]?.int64Value == Int64(database), "\(context)")
        #expect(response.json["codeVersion"]?.int64Value == Int64(users.version), "\(context)")
        let detail = response.json["detail"]?.stringValue ?? ""
        #expect(detail.contains("users projection is at version \(database)"), "\(context): \(detail)")
        #expect(detail.contains("(version \(users.version))"), "\(context): \(detail)")
        #expect(response.headers["retry-after"] != nil, "\(context)")
    }

    static func gauge(_ service: TestService) throws -> String {
        let metrics = try service.client(nil).get("/metrics").text
        return metrics.split(separator: "\n").filter { $0.hasPrefix("iap_projection_version_ahead{") }.joined(
            separator: "\n")
    }

    static func occurrences(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    @Test func runningInstancesStopWhenANewerVersionIsBuiltAndResumeWhenItIsTheirsAgain() throws {
        let old = try TestService()
        defer { old.stop() }
        let other = try TestService(sharing: old)
        defer { other.stop() }
        #expect(try Self.purchase(old, "u-before", "9100001").status == 200)
        #expect(try Self.readyz(old).status == 200)
        #expect(try Self.gauge(old).contains("iap_projection_version_ahead{projection=\"users\"} 0"))

        // A newer instance rebuilt `users` at the next version: nothing is asked of the running ones.
        let newer = Self.users.version + 1
        try Self.recordUsers(newer, old.conninfo)
        for (name, instance) in [("old", old), ("other", other)] {
            Self.expectAhead(try Self.awaitReadiness(instance, 503), database: newer, "\(name) /readyz")
        }
        let events = try Self.eventCount(old.conninfo)
        Self.expectAhead(try Self.purchase(old, "u-refused", "9100002"), database: newer, "purchase")
        Self.expectAhead(
            try old.client().debit("u-before", "coins", amount: 1, key: "refused-debit"), database: newer, "debit")
        Self.expectAhead(try old.client().get("/v1/users/u-before"), database: newer, "user document")
        Self.expectAhead(
            try old.client().get("/v1/users/u-before?asOf=" + RFC3339.format(old.clock.now)), database: newer, "asOf")
        Self.expectAhead(try other.client().post("/v1/admin/replay", .object([:])), database: newer, "replay")
        #expect(try Self.eventCount(old.conninfo) == events)  // nothing refused reached the log
        #expect(try Self.builtUsers(old.conninfo) == newer)  // the replay did not undo the newer rebuild
        let gauge = try Self.gauge(old)
        #expect(gauge.contains("iap_projection_version_ahead{projection=\"users\"} 1"), "\(gauge)")
        #expect(gauge.contains("iap_projection_version_ahead{projection=\"analytics\"} 0"), "\(gauge)")
        // Said once, however many requests were refused.
        #expect(Self.occurrences("projection version ahead", in: old.log.text) == 1, "\(old.log.text)")
        // Reads that render nothing keep working (the event log is the same for every version).
        #expect(try old.client().get("/v1/users/u-before/events").status == 200)
        // Neither holds a background job's lease any more, so an instance with current code
        // would take them instead of the jobs pausing until the old ones stop.
        #expect(try Self.awaitLeaseRows(old.conninfo) { $0 == 0 }, "leases still held while ahead")
        #expect(old.log.text.contains("lease given up") || other.log.text.contains("lease given up"))

        // The database back at this code's version (an operator replayed it with this code): both serve again.
        try Self.recordUsers(Self.users.version, old.conninfo)
        for (name, instance) in [("old", old), ("other", other)] {
            #expect(try Self.awaitReadiness(instance, 200).status == 200, "\(name)")
        }
        #expect(try Self.purchase(old, "u-after", "9100003").status == 200)
        #expect(try old.client().user("u-after")["entitlements"]?["pro"]?["active"]?.boolValue == true)
        #expect(try Self.gauge(old).contains("iap_projection_version_ahead{projection=\"users\"} 1") == false)
        #expect(old.log.text.contains("projection version no longer ahead: serving again"))
        #expect(try Self.awaitLeaseRows(old.conninfo) { $0 > 0 }, "no lease taken again once current")
    }

    /// Waits up to 10 s for the count of live leases in ops.leases to satisfy `condition`.
    static func awaitLeaseRows(_ conninfo: String, _ condition: (Int64) -> Bool) throws -> Bool {
        let connection = try Connection(conninfo)
        let held = try? eventually("the live leases to match", within: 10) {
            condition(
                try connection.query("SELECT count(*) AS n FROM ops.leases WHERE expires_at > now()").int64(0, "n")
                    ?? -1)
        }
        return held != nil
    }

    @Test func aWriteThatRacesTheRebuildIsRefusedInItsOwnTransaction() throws {
        let old = try TestService()
        defer { old.stop() }
        #expect(try Self.purchase(old, "u-before", "9100011").status == 200)
        // The watch has not seen the newer version (its poll is stopped): only the check inside
        // the write's transaction (migration 0033) stands between it and the old rules.
        old.app.jobs.stop(named: "projection-version-watch")
        let newer = Self.users.version + 1
        try Self.recordUsers(newer, old.conninfo)
        #expect(old.app.service.projectionVersions.projectionsAhead.isEmpty)
        let events = try Self.eventCount(old.conninfo)
        Self.expectAhead(try Self.purchase(old, "u-raced", "9100012"), database: newer, "racing purchase")
        #expect(try Self.eventCount(old.conninfo) == events)  // its events rolled back with it
        let stored = try Connection(old.conninfo).query("SELECT 1 FROM proj.users WHERE user_id = 'u-raced'")
        #expect(stored.isEmpty)
        // The refusal brought the watch up to date at once: unready without a poll.
        Self.expectAhead(try Self.readyz(old), database: newer, "/readyz after the refused write")
        Self.expectAhead(try old.client().get("/v1/users/u-before"), database: newer, "user document")
    }

    @Test func theSwapWaitsForAWriterThatPassedItsVersionCheck() throws {
        let service = try TestService()
        defer { service.stop() }
        #expect(try Self.purchase(service, "u-1", "9100041").status == 200)
        // A writer between its check and its commit (migration 0033): the check took proj.users ACCESS SHARE.
        let writer = try Connection(service.conninfo)
        try writer.executeScript("BEGIN")
        _ = try writer.query("SELECT es.require_projection_version($1::integer, NULL)", [String(Self.users.version)])
        let finished = DispatchSemaphore(value: 0)
        let status = StatusBox()
        let (port, key) = (service.app.port, service.keys["all"])
        Thread.detachNewThread {
            let response = try? ServiceHTTPClient(port: port, apiKey: key)
                .post("/v1/admin/replay", .object(["projections": .array(["users"])]))
            status.value.withLock { $0 = response?.status }
            finished.signal()
        }
        // The swap's session waits for it: a writer that passed commits before the version can move
        // (without the check's table lock the swap would not wait).
        let observer = try Connection(service.conninfo)
        var waiting: Int64 = 0
        try? eventually("the swap to wait for the writer's lock", within: 60) {
            waiting =
                try observer.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'relation'"
                        + " AND datname = current_database()"
                ).int64(0, "n") ?? 0
            return waiting != 0 || status.value.withLock({ $0 }) != nil
        }
        #expect(waiting == 1)
        #expect(status.value.withLock { $0 } == nil)  // still waiting
        try writer.executeScript("COMMIT")
        #expect(finished.wait(timeout: .now() + 60) == .success)
        #expect(status.value.withLock { $0 } == 200)
        #expect(try Self.builtUsers(service.conninfo) == Self.users.version)
    }

    @Test func anInstanceStartedOnANewerDatabaseRebuildsNothingStartsUnreadyAndTheCLIRollsBackOnlyWhenAsked() throws {
        let first = try TestService()
        #expect(try Self.purchase(first, "u-1", "9100021").status == 200)
        first.stop()
        let newer = Self.users.version + 1
        try Self.recordUsers(newer, first.conninfo)
        let documents = try CatalogInForceTests.documents(first.conninfo)

        // `serve` keeps running, unready from its first answer, and never rebuilds the newer version back.
        let late = try TestService(sharing: first)
        defer { late.stop() }
        Self.expectAhead(try Self.readyz(late), database: newer, "/readyz at start")
        #expect(try Self.builtUsers(first.conninfo) == newer)
        #expect(try CatalogInForceTests.documents(first.conninfo) == documents)
        #expect(Self.occurrences("projection version ahead", in: late.log.text) == 1, "\(late.log.text)")
        #expect(late.log.text.contains("databaseVersion=\(newer)"), "\(late.log.text)")
        Self.expectAhead(try Self.purchase(late, "u-2", "9100022"), database: newer, "purchase at start")

        // `iap-ledger replay` of this (older) code refuses, in one line, unless --downgrade.
        let refused = try OpsBinary.run(["replay"], environment: ["DATABASE_URL": first.conninfo])
        #expect(refused.status != 0)
        let line = refused.stderrLines.last ?? ""
        #expect(line.contains("users: the database is at version \(newer)"), "\(refused.stderr)")
        #expect(line.contains("--downgrade"), "\(refused.stderr)")
        #expect(try Self.builtUsers(first.conninfo) == newer)
        let rolledBack = try OpsBinary.run(
            ["replay", "--downgrade", "--projection", "users"], environment: ["DATABASE_URL": first.conninfo])
        #expect(rolledBack.status == 0, "\(rolledBack.stderr)")
        #expect(try Self.builtUsers(first.conninfo) == Self.users.version)
        // The instance left running resumes by itself.
        #expect(try Self.awaitReadiness(late, 200).status == 200)
        #expect(try Self.purchase(late, "u-2", "9100022").status == 200)
    }

    @Test func twoServeProcessesOnADatabaseBuiltByNewerCodeStayUpUnreadyAndServeOnceTheVersionsAgree() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let migrated = try OpsBinary.run(["migrate"], environment: ["DATABASE_URL": conninfo])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        let newer = Self.users.version + 1
        try Self.recordUsers(newer, conninfo)
        let serves = try (0..<2).map { _ in try OpsServe([], environment: ["DATABASE_URL": conninfo, "PORT": "0"]) }
        defer { for serve in serves { _ = serve.stop(SIGKILL) } }
        for serve in serves {
            // What HAProxy's health check sees from the first request on.
            let ready = try OpsHTTP.get(port: serve.port, "/readyz")
            #expect(ready.status == 503, "\(ready.body)")
            #expect(ready.body.contains("\"code\":\"projection_version_ahead\""), "\(ready.body)")
            // stderr is read apart
            try eventually("serve.stderr.contains(\"projection version ahead\")", within: 5) {
                serve.stderr.contains("projection version ahead")
            }
            let lines = serve.stderr.split(separator: "\n").filter { $0.contains("projection version ahead") }
            #expect(lines.count == 1, "\(serve.stderr)")
            #expect(lines.first?.contains("databaseVersion=\(newer)") == true, "\(serve.stderr)")
            #expect(lines.first?.contains("codeVersion=\(Self.users.version)") == true, "\(serve.stderr)")
        }
        #expect(try Self.builtUsers(conninfo) == newer)
        try Self.recordUsers(Self.users.version, conninfo)
        for serve in serves {
            try eventually("(try? OpsHTTP.get(port: serve.port, \"/readyz\").status) == 200", within: 10) {
                (try? OpsHTTP.get(port: serve.port, "/readyz").status) == 200
            }
            #expect(serve.stop() == 0)
        }
    }

    @Test func anOlderInstanceRecordsNoNewCatalogIntoADatabaseBuiltByNewerCode() throws {
        let first = try TestService()
        defer { first.stop() }
        try CatalogInForceTests.seed(first)
        let documents = try CatalogInForceTests.documents(first.conninfo)
        try Self.recordUsers(Self.users.version + 1, first.conninfo)
        // Its config brings a new catalog; recording it would re-render users with this code's rules.
        let late = try TestService(configuration: CatalogInForceTests.newConfiguration(), sharing: first)
        defer { late.stop() }
        #expect(try CatalogInForceTests.catalogHead(first.conninfo) == 1)
        #expect(late.app.service.catalogs.current.version == 1)
        #expect(late.log.text.contains("the config's catalog is not recorded"), "\(late.log.text)")
        #expect(try CatalogInForceTests.documents(first.conninfo) == documents)
        let file = try CatalogInForceTests.newConfigFile()
        let refused = try OpsBinary.run(
            ["catalog", "record", "--config", file], environment: ["DATABASE_URL": first.conninfo])
        #expect(refused.status != 0)
        #expect(
            refused.stderrLines.last?.contains(
                "nothing recorded: the users projection is at version \(Self.users.version + 1)") == true,
            "\(refused.stderr)")
        #expect(try CatalogInForceTests.catalogHead(first.conninfo) == 1)
    }

    @Test func aNewerAnalyticsVersionAlsoStopsTheInstanceAndIsNotRebuiltBack() throws {
        let old = try TestService()
        defer { old.stop() }
        let analytics = ProjectionVersions.analytics
        try ProjectionVersions.record(
            ProjectionVersions.Definition(name: analytics.name, version: analytics.version + 1, inline: false),
            position: .start, on: Connection(old.conninfo))
        let response = try Self.awaitReadiness(old, 503)
        #expect(response.json["code"]?.stringValue == "projection_version_ahead", "\(response.text)")
        #expect(response.json["projection"]?.stringValue == analytics.name)
        #expect(try Self.purchase(old, "u-1", "9100031").status == 503)
        let restarted = try TestService(sharing: old)
        defer { restarted.stop() }
        #expect(try ProjectionVersions.built(on: Connection(old.conninfo))[analytics.name] == analytics.version + 1)
        #expect(try Self.readyz(restarted).status == 503)
    }
}

/// The answer of a request made on another thread.
private final class StatusBox: Sendable {
    let value = Mutex<Int?>(nil)
}
