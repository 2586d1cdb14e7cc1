import EventStore
import Foundation
import Infrastructure
import Service
import TestSupport
import Testing

/// PostgreSQL goes away and comes back under a running service: /readyz and the data routes
/// say 503 store_unavailable (with Retry-After) while it is down, and recover without a restart.
@Suite(.tags(.database, .slow)) struct OpsReadinessTests {
    @Test func stoppingPostgreSQLMakesTheServiceUnreadyAndStartingItAgainRecoversWithoutARestart() throws {
        let root = try OpsBinary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dataDirectory = root + "/cluster"
        var cluster = try EmbeddedPostgres.start(dataDirectory: dataDirectory)
        cluster.stopWhenProcessExits()
        defer { cluster.stop() }
        let conninfo = cluster.connectionString()

        var options = ServiceApp.Options()
        options.databaseURL = conninfo
        options.port = 0
        options.threads = 2
        options.logger = .silent
        let app = try ServiceApp.start(options)
        defer { app.stop() }

        let admin = try Connection(conninfo)
        let usedKey = try APIKeys().create(name: "used", scopes: ["read"], on: admin)
        let freshKey = try APIKeys().create(name: "fresh", scopes: ["read"], on: admin)
        let auth = { (key: String) in ["Authorization": "Bearer \(key)"] }

        #expect(try OpsHTTP.get(port: app.port, "/readyz").status == 200)
        #expect(try OpsHTTP.get(port: app.port, "/v1/users/alice", headers: auth(usedKey)).status == 200)

        cluster.stop()

        let unready = try OpsHTTP.get(port: app.port, "/readyz")
        #expect(unready.status == 503)
        #expect(unready.headers["content-type"] == "application/problem+json")
        #expect(unready.body.contains(#""code":"store_unavailable""#), "\(unready.body)")
        #expect(unready.headers["retry-after"] != nil)
        #expect(try OpsHTTP.get(port: app.port, "/healthz").status == 200, "liveness does not depend on the store")

        // A key checked before the outage (cached) and one never seen: both "retry later", not 401.
        for key in [usedKey, freshKey] {
            let down = try OpsHTTP.get(port: app.port, "/v1/users/alice", headers: auth(key))
            #expect(down.status == 503, "\(down.body)")
            #expect(down.body.contains(#""code":"store_unavailable""#), "\(down.body)")
            #expect(down.headers["retry-after"] != nil)
        }
        // …and counted as what they were answered, so an outage shows as 503s, not as bad keys.
        let metrics = try OpsHTTP.get(port: app.port, "/metrics").body
        #expect(
            metrics.contains(#"iap_http_requests_total{route="/v1/users/{userId}",method="GET",status="503"} 2"#),
            "\(metrics)")
        #expect(!metrics.contains(#"iap_http_requests_total{route="/v1/users/{userId}",method="GET",status="401"}"#))
        // A request without a key is still plainly unauthorized.
        #expect(try OpsHTTP.get(port: app.port, "/v1/users/alice").status == 401)
        #expect(try OpsHTTP.get(port: app.port, "/v1/users/alice", headers: auth("iap_nonsense")).status != 200)

        cluster = try EmbeddedPostgres.start(dataDirectory: dataDirectory)
        cluster.stopWhenProcessExits()
        #expect(cluster.connectionString() == conninfo, "same socket, so the pool's conninfo still holds")

        #expect(try OpsHTTP.get(port: app.port, "/readyz").status == 200)
        try eventually(
            "(try? OpsHTTP.get(port: app.port, \"/v1/users/alice\", headers: auth(freshKey)).status) == 200", within: 10
        ) {
            (try? OpsHTTP.get(port: app.port, "/v1/users/alice", headers: auth(freshKey)).status) == 200
        }
        #expect(try OpsHTTP.get(port: app.port, "/v1/users/alice", headers: auth(usedKey)).status == 200)
        let ready = try OpsHTTP.get(port: app.port, "/readyz")
        #expect(ready.body == #"{"status":"ready"}"#)
    }

    /// In transaction pool mode the same settings are a prologue of the statement's own implicit
    /// transaction (PgBouncerTransactionModeTests runs this through PgBouncer).
    @Test(arguments: PoolMode.allCases)
    func pooledConnectionsBoundStatementsAndAbandonedTransactions(mode: PoolMode) throws {
        var options = ServiceApp.Options()
        options.statementTimeoutSeconds = 30
        options.idleInTransactionTimeoutSeconds = 60
        options.databasePoolMode = mode
        let connection = try Connection(
            try TestDatabase.shared.freshDatabase(), session: ServiceApp.serviceSession(options))
        let rows = try connection.query(
            "SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout'), current_user",
            [])
        #expect(rows[0, 0] == "30s")
        #expect(rows[0, 1] == "1min")
        #expect(rows[0, 2] == "iap_ledger_service")
    }
}
