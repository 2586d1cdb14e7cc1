import EventStore
import Foundation
import Glibc
import JSON
import TestSupport
import Testing

extension ClusterTests {
    /// An instance lost under load: `kill -9` costs only the requests it was answering, its
    /// background work moves to a survivor, and a SIGTERM (drain) costs nothing at all.
    @Suite(.tags(.database, .cluster, .slow)) struct Crash {
        @Test func killingAnInstanceUnderLoadLosesNothingAcknowledgedAndItsBackgroundWorkMoves() throws {
            let cluster = try LocalCluster()
            defer { cluster.down() }
            // The instance running the most background jobs (GET /v1/admin/projections lists the leases).
            let before = try Self.liveLeases(cluster)
            let victim =
                Dictionary(grouping: before.values, by: { $0 }).max { $0.value.count < $1.value.count }?.key ?? "node2"
            let victimJobs = before.filter { $0.value == victim }.keys.sorted()
            #expect(!victimJobs.isEmpty, "no instance holds a background job: \(before)")
            let victimPid = try cluster.pid(victim)

            let load = ClusterLoad(cluster, clients: 8, prefix: 81)
            let readers = ClusterLoad(cluster, clients: 3, prefix: 82, reads: true)
            var stopped = false
            defer {
                if !stopped {
                    _ = load.stop()
                    _ = readers.stop()
                }
            }
            try load.waitForAcknowledged(40, within: 60)
            #expect(kill(victimPid, SIGKILL) == 0)
            let killed = Date()
            // The survivors keep taking purchases.
            try load.waitForAcknowledged(80, within: 60)

            // The background jobs: a purchase now reaches analytics (the projector runs somewhere
            // alive) and, with leases, no job is left with the dead holder — within 10 s of the kill.
            #expect(
                try LocalCluster.purchase(cluster.client(), user: "u-after-kill", transactionId: "8200001").status
                    == 200)
            let primary = try cluster.postgres("pg1")
            try eventually(
                "an instance to project analytics within 10 s of the kill",
                within: max(0.5, 10 - Date().timeIntervalSince(killed))
            ) {
                let rows = try? primary.query("SELECT 1 FROM analytics.transactions WHERE transaction_id = '8200001'")
                return rows?.count == 1
            }
            try eventually(
                "\(victim)'s jobs \(victimJobs) held by another within 10 s of the kill: \((try? Self.liveLeases(cluster)) ?? [:])",
                within: max(0.5, 10 - Date().timeIntervalSince(killed))
            ) {
                let now = (try? Self.liveLeases(cluster)) ?? [:]
                return victimJobs.allSatisfy { now[$0] != nil && now[$0] != victim }
            }
            let takeover = Date().timeIntervalSince(killed)

            let outcomes = load.stop()
            let reads = readers.stop()
            stopped = true
            // A read in flight on the dead instance is replayed on another (retry-on empty-response).
            let failedReads = reads.filter { !$0.acknowledged }
            #expect(
                failedReads.isEmpty,
                "\(failedReads.count) of \(reads.count) reads failed: \(failedReads.prefix(3).map { "\($0.status) \($0.text)" })"
            )
            let readIds = Set(reads.map(\.transactionId))
            let replayed = cluster.haproxyLog().filter {
                readIds.contains($0["client_request"] ?? "") && $0["retries"] != "0"
            }
            let failed = outcomes.filter { !$0.acknowledged }
            // What HAProxy had sent to the victim and never got an answer for: the requests in
            // flight on it when it died (the rest were refused at connect and sent elsewhere).
            let ids = Set(outcomes.map(\.transactionId))
            try? eventually(
                "Set(cluster.haproxyLog().compactMap { $0[\"client_request\"] }).isSuperset( of: failed.map(\\.transactionId))",
                within: 5
            ) {
                Set(cluster.haproxyLog().compactMap { $0["client_request"] }).isSuperset(
                    of: failed.map(\.transactionId))
            }
            let cut = cluster.haproxyLog().filter {
                $0["server"] == victim && $0["status"] != "200" && ids.contains($0["client_request"] ?? "")
            }
            let inFlight = Set(cut.compactMap { $0["client_request"] })
            print(
                "ClusterTests: kill -9 \(victim) (holding \(victimJobs), held elsewhere after \(String(format: "%.1f", takeover)) s): \(outcomes.count) purchases, \(failed.count) failed, \(inFlight.count) in flight on it: \(cut.map { "\($0["status"] ?? "?") \($0["term"] ?? "?")" }); \(reads.count) reads, none failed, \(replayed.count) retried or redispatched"
            )
            #expect(failed.count <= inFlight.count, "\(failed.map { "\($0.transactionId) \($0.status) \($0.text)" })")
            #expect(failed.allSatisfy { inFlight.contains($0.transactionId) }, "failures not in flight on \(victim)")
            #expect(inFlight.count <= load.clients)

            // Every acknowledged purchase is recorded; nothing beyond what was sent.
            for client in 0..<load.clients {
                let mine = outcomes.filter { $0.client == client }
                let recorded = try LocalCluster.recordedTransactions(cluster.client(), user: ClusterLoad.user(client))
                let acknowledged = Set(mine.filter(\.acknowledged).map(\.transactionId))
                #expect(
                    recorded.isSuperset(of: acknowledged), "client \(client) lost \(acknowledged.subtracting(recorded))"
                )
                #expect(recorded.isSubset(of: Set(mine.map(\.transactionId))))
            }

            // `up` brings the dead instance back; then a SIGTERM drains one without a single failure.
            let healed = try cluster.command("up", timeout: 120)
            #expect(healed.status == 0, "\(healed.stderr)")
            #expect(try cluster.haproxyServers() == ["node1": "UP", "node2": "UP", "node3": "UP"])
            try Self.aDrainedInstanceCostsNoRequest(cluster, node: victim == "node3" ? "node1" : "node3")

            // `down` after a kill -9 of HAProxy, PgBouncer and an instance still stops everything.
            let pids = cluster.allPids()
            #expect(pids.count == 7, "\(pids)")
            for component in ["haproxy", "pgbouncer", victim] {
                if let pid = pids[component], pid > 0 { kill(pid, SIGKILL) }
            }
            let down = try cluster.command("down", timeout: 90)
            #expect(down.status == 0, "\(down.stderr)")
            try eventually("still running: \(pids.filter { opsProcessIsAlive($0.value) })", within: 10) {
                pids.values.allSatisfy { !opsProcessIsAlive($0) }
            }
        }

        /// SIGTERM with IAP_LEDGER_DRAIN_SECONDS=3: HAProxy sees /readyz turn 503 and stops
        /// sending before the instance stops accepting.
        static func aDrainedInstanceCostsNoRequest(_ cluster: LocalCluster, node: String) throws {
            let load = ClusterLoad(cluster, clients: 4, prefix: 83)
            try load.waitForAcknowledged(20, within: 60)
            let pid = try cluster.pid(node)
            #expect(kill(pid, SIGTERM) == 0)
            try eventually("\(node) did not stop after SIGTERM", within: 30) { !opsProcessIsAlive(pid) }
            try load.waitForAcknowledged(20, within: 60)
            let outcomes = load.stop()
            let failed = outcomes.filter { !$0.acknowledged }
            #expect(
                failed.isEmpty,
                "\(failed.count) of \(outcomes.count) failed: \(failed.prefix(3).map { "\($0.status) \($0.text)" })")
            #expect(try cluster.haproxyServers()[node] == "DOWN")
            let log = (try? String(contentsOfFile: cluster.directory + "/log/\(node).log", encoding: .utf8)) ?? ""
            #expect(log.contains("msg=draining seconds=3"))
        }

        /// job → holder of every live lease in `GET /v1/admin/projections` (none before leases).
        static func liveLeases(_ cluster: LocalCluster) throws -> [String: String] {
            let response = try cluster.client().get("/v1/admin/projections")
            guard response.status == 200 else {
                throw OpsFailure("admin/projections: \(response.status) \(response.text)")
            }
            var holders: [String: String] = [:]
            for lease in response.json["leases"]?.arrayValue ?? [] where lease["expired"]?.boolValue != true {
                if let name = lease["name"]?.stringValue, let holder = lease["holder"]?.stringValue {
                    holders[name] = holder
                }
            }
            return holders
        }
    }
}
