import EventStore
import Foundation
import JSON
import Schema
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The service through a real PgBouncer in `pool_mode = transaction` (PgBouncer 1.18: no
/// prepared-statement support), where consecutive transactions of one connection may run on
/// different server sessions and a server session serves many connections in turn.
@Suite(.tags(.database, .cluster, .slow)) final class PgBouncerTransactionModeTests {
    /// 4 server sessions per database: a service's 8 pooled connections (and its background
    /// jobs, and the other instances) really share them.
    let bouncer: PgBouncer

    init() throws { bouncer = try PgBouncer.start(inFrontOf: try TestDatabase.shared.server()) }

    deinit { bouncer.stop() }

    static let serviceSession = SessionSettings(poolMode: .transaction, role: ServiceRole.name)
        .setting("statement_timeout", "30s")

    /// The premise: PgBouncer really shares server sessions, so session mode (named statements)
    /// breaks exactly as the issue says, and transaction mode does not.
    @Test func sessionModeClashesOnStatementNamesAndTransactionModeDoesNot() throws {
        let single = try PgBouncer.start(inFrontOf: try TestDatabase.shared.server(), poolSize: 1)
        defer { single.stop() }
        let conninfo = try single.connectionString(replacing: try TestDatabase.shared.freshDatabase())
        let first = try Connection(conninfo)
        let second = try Connection(conninfo)
        _ = try first.query("SELECT 1")
        #expect(throws: DatabaseError.self) { _ = try second.query("SELECT 2") }
        let third = try Connection(conninfo, session: SessionSettings(poolMode: .transaction))
        let fourth = try Connection(conninfo, session: SessionSettings(poolMode: .transaction))
        for _ in 0..<3 {
            #expect(try third.query("SELECT $1::int AS n", ["3"])[0, "n"] == "3")
            #expect(try fourth.query("SELECT $1::int AS n", ["4"])[0, "n"] == "4")
        }
    }

    /// SET LOCAL through `set_config(…, true)` in the statement's own implicit transaction (a
    /// pipeline under one Sync) is in force on PostgreSQL 15, and leaves nothing behind: the next
    /// client of the one server session is the login role again, with the default timeout.
    @Test func theServiceRoleIsInForceInEveryStatementAndNeverLeaks() throws {
        let single = try PgBouncer.start(inFrontOf: try TestDatabase.shared.server(), poolSize: 1)
        defer { single.stop() }
        let conninfo = try single.connectionString(replacing: try TestDatabase.shared.freshDatabase())
        let service = try Connection(conninfo, session: Self.serviceSession)
        let admin = try Connection(conninfo, session: SessionSettings(poolMode: .transaction))
        let check = "SELECT current_user AS u, current_setting('statement_timeout') AS t"
        // Autocommit query, pipeline, transaction, script: each as the service role.
        #expect(try service.query(check)[0, "u"] == "iap_ledger_service")
        #expect(try service.query(check)[0, "t"] == "30s")
        #expect(
            try service.pipeline([.init(check), .init(check)]).map { $0[0, "u"] } == [
                "iap_ledger_service", "iap_ledger_service",
            ])
        #expect(try service.transaction { try $0.query(check)[0, "u"] } == "iap_ledger_service")
        let forbidden = "INSERT INTO public.schema_migrations (version, name) VALUES (9999, 'not-the-service')"
        let attempts: [(Connection) throws -> Void] = [
            { _ = try $0.execute(forbidden) },
            { try $0.executeScript(forbidden) },
            { connection in try connection.transaction { (inner: Connection) -> Void in try inner.execute(forbidden) }
            },
            { try $0.transaction { try $0.executeScript(forbidden) } },
        ]
        for attempt in attempts {
            let error = #expect(throws: DatabaseError.self) { try attempt(service) }
            #expect(error?.sqlState == "42501", "\(String(describing: error))")
        }
        // The same server session, next client: nothing of the service's settings is left.
        #expect(try admin.query(check)[0, "u"] == "postgres")
        #expect(try admin.query(check)[0, "t"] == "0")
        try admin.executeScript(forbidden)
        #expect(
            try admin.query("SELECT count(*) AS n FROM public.schema_migrations WHERE version = 9999")[0, "n"] == "1")
    }

    @Test func startPurchasesFortyConcurrentDebitsReadsAndReplay() throws {
        let service = try TestService(threads: 8, through: bouncer)
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        let coins = Mint.transaction(
            "4600001", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        #expect(
            try api.purchase("u-pooled", Mint.signed(coins)).json["customer"]?["balances"]?["coins"]?.int64Value == 100)
        let statuses = try Self.debitConcurrently(
            40, user: "u-pooled", ports: [service.app.port], key: service.keys["write"])
        #expect(statuses.filter { $0 == 200 }.count == 10, "\(statuses)")
        #expect(statuses.filter { $0 == 409 }.count == 30, "\(statuses)")
        #expect(try api.user("u-pooled")["balances"]?["coins"]?.int64Value == 0)
        #expect(try api.events("u-pooled").filter { $0["type"]?.stringValue == "BalanceDebited" }.count == 10)

        let replay = try api.post("/v1/admin/replay", .object([:]))
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.json["swapped"]?.boolValue == true, "\(replay.text)")
        #expect(replay.json["changedUsers"]?.arrayValue?.isEmpty == true, "\(replay.text)")
        #expect(try api.user("u-pooled")["balances"]?["coins"]?.int64Value == 0)
        #expect(try api.debit("u-pooled", "coins", amount: 1, key: "after-replay").status == 409)
    }

    /// Three instances on one PgBouncer and one database: no statement name, role or setting of
    /// one reaches another through a shared server session; writes seen by every instance.
    @Test func threeInstancesShareOnePgBouncer() throws {
        let first = try TestService(threads: 8, through: bouncer)
        defer { first.stop() }
        let second = try TestService(threads: 8, sharing: first, through: bouncer)
        defer { second.stop() }
        let third = try TestService(threads: 8, sharing: first, through: bouncer)
        defer { third.stop() }
        let instances = [first, second, third]
        let now = first.clock.now
        for (index, instance) in instances.enumerated() {
            let coins = Mint.transaction(
                "460010\(index)", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
                signed: now - day)
            #expect(try instance.client().purchase("u-three", Mint.signed(coins)).status == 200)
        }
        for instance in instances {
            #expect(try instance.client().user("u-three")["balances"]?["coins"]?.int64Value == 300)
        }
        let statuses = try Self.debitConcurrently(
            40, amount: 30, user: "u-three", ports: instances.map(\.app.port), key: first.keys["write"])
        #expect(statuses.filter { $0 == 200 }.count == 10, "\(statuses)")
        #expect(statuses.filter { $0 == 409 }.count == 30, "\(statuses)")
        for instance in instances {
            #expect(try instance.client().user("u-three")["balances"]?["coins"]?.int64Value == 0)
        }
        for instance in instances {
            let metrics = try instance.client().get("/metrics")
            #expect(metrics.status == 200)
            #expect(!instance.log.text.contains("already exists"), "a statement name clashed")
        }
    }

    /// Migrating through PgBouncer: two migrators at once, each file applied once.
    @Test func migratorsThroughPgBouncerApplyEachFileOnce() throws {
        let conninfo = try bouncer.connectionString(replacing: try TestDatabase.shared.freshDatabase(migrated: false))
        let applied = Mutex<[String]>([])
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        for _ in 0..<2 {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                do {
                    let connection = try Connection(conninfo, session: SessionSettings(poolMode: .transaction))
                    let names = try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all)
                    applied.withLock { $0 += names }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        done.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(applied.withLock { $0 }.sorted() == SchemaMigrations.all.map(\.name))
        let again = try Connection(conninfo, session: SessionSettings(poolMode: .transaction))
        #expect(try Migrator.migrate(connection: again, migrations: SchemaMigrations.all).isEmpty)
    }

    /// `count` debits of `amount` coins at once, spread round-robin over `ports`; their statuses.
    static func debitConcurrently(
        _ count: Int, amount: Int64 = 10, user: String, ports: [Int], key: String?
    ) throws -> [Int] {
        let statuses = Mutex<[Int]>([])
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for index in 0..<count {
            ready.enter()
            done.enter()
            let port = ports[index % ports.count]
            Thread.detachNewThread {
                let client = ServiceHTTPClient(port: port, apiKey: key)
                defer { done.leave() }
                _ = try? client.get("/healthz")
                ready.leave()
                start.wait()
                let status = (try? client.debit(user, "coins", amount: amount, key: "pooled-\(index)").status) ?? -1
                statuses.withLock { $0.append(status) }
            }
        }
        ready.wait()
        for _ in 0..<count { start.signal() }
        done.wait()
        return statuses.withLock { $0 }
    }
}
