import EventStore
import Foundation
import JSON
import TestSupport
import Testing

extension ClusterTests {
    /// docs/operations.md's "Failover" runbook, as `deploy/local-cluster failover` performs it:
    /// the replica promoted and PgBouncer repointed while clients write through HAProxy.
    @Suite(.tags(.database, .cluster, .slow)) struct Failover {
        @Test func promotingTheReplicaWhileClientsWriteLosesNothingAcknowledgedAndWritesContinue() throws {
            let cluster = try LocalCluster()
            defer { cluster.down() }
            let load = ClusterLoad(cluster, clients: 4, prefix: 91)
            var stopped = false
            defer { if !stopped { _ = load.stop() } }
            try load.waitForAcknowledged(30, within: 60)

            let started = Date()
            let failover = try cluster.command("failover", timeout: 120)
            let seconds = Date().timeIntervalSince(started)
            try #require(failover.status == 0, "failover: \(failover.stdout)\n\(failover.stderr)")
            let acknowledgedBefore = Set(load.all.filter(\.acknowledged).map(\.transactionId))
            #expect(failover.stdout.contains("promoted pg2"), "\(failover.stdout)")
            // Writes continue on the new primary.
            try load.waitForAcknowledged(40, within: 60)
            let outcomes = load.stop()
            stopped = true

            let newPrimary = try cluster.postgres("pg2")
            #expect(try newPrimary.query("SELECT pg_is_in_recovery()")[0, 0] == "f")
            let status = try cluster.command("status")
            #expect(status.stdout.contains("primary pg2 "), "\(status.stdout)")
            #expect(
                status.stdout.contains("retired pg1 127.0.0.1:\(cluster.postgresPort("pg1")) stopped"),
                "\(status.stdout)")
            #expect(
                status.stdout.contains("→ port \(cluster.postgresPort("pg2"))"), "PgBouncer repointed: \(status.stdout)"
            )

            // Nothing acknowledged — before, during or after the promotion — is missing.
            var recordedAll = Set<String>()
            for client in 0..<load.clients {
                recordedAll.formUnion(
                    try LocalCluster.recordedTransactions(cluster.client(), user: ClusterLoad.user(client)))
            }
            let acknowledged = Set(outcomes.filter(\.acknowledged).map(\.transactionId))
            #expect(
                acknowledgedBefore.subtracting(recordedAll).isEmpty,
                "lost: \(acknowledgedBefore.subtracting(recordedAll))")
            #expect(acknowledged.subtracting(recordedAll).isEmpty, "lost: \(acknowledged.subtracting(recordedAll))")
            // What failed meanwhile said "retry": 503 store_unavailable with Retry-After.
            let failed = outcomes.filter { !$0.acknowledged }
            #expect(
                failed.allSatisfy { $0.status == 503 && $0.text.contains("store_unavailable") },
                "\(Dictionary(grouping: failed) { "\($0.status) \($0.text.prefix(160))" }.mapValues(\.count))")
            print(
                "ClusterTests: failover in \(String(format: "%.1f", seconds)) s under load: \(outcomes.count) purchases, \(failed.count) answered 503, \(acknowledged.count) acknowledged, all recorded"
            )

            // `up` makes the old primary the new replica (a fresh base backup of pg2).
            let rejoined = try cluster.command("up", timeout: 120)
            #expect(rejoined.status == 0, "\(rejoined.stderr)")
            let after = try cluster.command("status")
            #expect(after.status == 0, "\(after.stdout)")
            #expect(
                after.stdout.contains("replica pg1 127.0.0.1:\(cluster.postgresPort("pg1")) running, streaming"),
                "\(after.stdout)")
            let replica = try cluster.postgres("pg1")
            let last = try #require(acknowledged.max())
            try eventually("the new replica lacks \(last)", within: 10) {
                (try? replica.query(
                    "SELECT 1 FROM es.events WHERE type = 'TransactionRecorded' AND data->>'transactionId' = $1",
                    [last]
                ).count) == 1
            }
        }
    }
}
