import EventStore
import Foundation
import TestSupport
import Testing

/// `--database-pool-mode` / `DATABASE_POOL_MODE` on the real binary.
@Suite(.tags(.database)) struct CLIPoolModeTests {
    @Test func aBadPoolModeIsOneLineNamingItAndExitTwo() throws {
        let conninfo = try TestDatabase.shared.freshDatabase(migrated: false)
        let flag = try OpsBinary.run(
            ["migrate", "--database-pool-mode", "pooled"], environment: ["DATABASE_URL": conninfo])
        #expect(flag.status == 2)
        #expect(
            flag.stderrLines.last
                == #"iap-ledger migrate: --database-pool-mode must be session or transaction, got "pooled" (see iap-ledger migrate --help)"#,
            "\(flag.stderr)")
        let environment = try OpsBinary.run(
            ["serve", "--port", "0"], environment: ["DATABASE_URL": conninfo, "DATABASE_POOL_MODE": "Transaction"])
        #expect(environment.status == 2)
        #expect(
            environment.stderrLines.last?.contains(
                #"DATABASE_POOL_MODE must be session or transaction, got "Transaction""#) == true,
            "\(environment.stderr)")
        // Nothing was migrated.
        let rows = try Connection(conninfo).query("SELECT to_regclass('public.schema_migrations') AS t")
        #expect(rows[0, "t"] == nil)
    }

    /// `migrate` and `keys` through PgBouncer in transaction pooling (the flag, then the variable).
    @Test func commandsWorkThroughPgBouncerInTransactionMode() throws {
        let bouncer = try PgBouncer.start(inFrontOf: try TestDatabase.shared.server(), poolSize: 1)
        defer { bouncer.stop() }
        let pooled = try bouncer.connectionString(replacing: try TestDatabase.shared.freshDatabase(migrated: false))
        let migrate = try OpsBinary.run(
            ["migrate", "--database-pool-mode=transaction"], environment: ["DATABASE_URL": pooled])
        #expect(migrate.status == 0, "\(migrate.stderr)")
        #expect(migrate.stdout.hasPrefix("applied 0001_"), "\(migrate.stdout)")
        for name in ["one", "two"] {
            let keys = try OpsBinary.run(
                ["keys", "create", "--name", name, "--scopes", "read"],
                environment: ["DATABASE_URL": pooled, "DATABASE_POOL_MODE": "transaction"])
            #expect(keys.status == 0, "\(keys.stderr)")
        }
        let list = try OpsBinary.run(
            ["keys", "list", "--database-pool-mode", "transaction"], environment: ["DATABASE_URL": pooled])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("one") && list.stdout.contains("two"), "\(list.stdout)")
    }
}
