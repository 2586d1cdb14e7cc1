import EventStore
import Foundation
import JSON
import Ledger
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Replay
@testable import Service

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.serialized, .tags(.database)) struct ReplayEngineTests {
    @Test func replayAfterTheScenariosGivesExactlyTheSameDocuments() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        let users = try harness.runScenarios()
        let before = try harness.documents()
        let ownersBefore = try harness.owners()
        #expect(Set(users).isSubset(of: Set(before.keys)))
        #expect(ownersBefore.values.contains("u-to") && !ownersBefore.values.contains("u-from"))

        let response = try harness.request("POST", "/v1/admin/replay", .object([:]))
        #expect(response.status == 200, "\(response.json)")
        #expect(response.json["swapped"]?.boolValue == true)
        #expect(response.json["events"]?.int64Value == Int64(try harness.eventCount()))
        #expect(response.json["changedUsers"]?.arrayValue?.isEmpty == true, "\(response.json)")
        #expect(response.json["durationMs"]?.int64Value != nil)

        let after = try harness.documents()
        #expect(after == before)
        #expect(try harness.owners() == ownersBefore)
        // The service keeps serving from the swapped-in tables, reads and writes.
        let read = try harness.request("GET", "/v1/users/u-coins")
        #expect(read.json["balances"]?["coins"]?.int64Value == 20)
        #expect(try harness.debit("u-coins", 5, key: "after-swap").status == 200)
        #expect(try harness.request("GET", "/v1/users/u-coins").json["balances"]?["coins"]?.int64Value == 15)
    }

    @Test func dryRunOnAnUnchangedLogReportsNoChangedUsers() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        let before = try harness.documents()
        let response = try harness.request("POST", "/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(response.status == 200)
        #expect(response.json["dryRun"]?.boolValue == true)
        #expect(response.json["swapped"]?.boolValue == false)
        #expect(response.json["changedUsers"]?.arrayValue?.count == 0, "\(response.json)")
        #expect(response.json["changedChainOwners"]?.int64Value == 0)
        #expect((response.json["events"]?.int64Value ?? 0) > 10)
        #expect(try harness.documents() == before)
        let tables = try harness.connection().query(
            "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'proj' AND tablename LIKE '%_next'")
        #expect(tables.int64(0, "n") == 0)
    }

    @Test func aChangedProjectionRuleListsExactlyTheUsersItAffects() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        try harness.purchase(
            "u-ads-2",
            ["productId": .string(TestService.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        // The rule change: removeads now grants "premium" instead of "no_ads".
        var catalog = TestService.scenarioConfiguration.catalog
        catalog.products[TestService.removeAds] = Ledger.Product(type: .nonConsumable, entitlements: ["premium"])
        let before = try harness.documents()
        let report = try harness.app.projections.engine.run(ReplayOptions(dryRun: true, catalog: catalog))
        #expect(Set(report.changedUsers.map(\.userId)) == ["u-ads", "u-ads-refund", "u-ads-2"])
        let ads = try #require(report.changedUsers.first { $0.userId == "u-ads" })
        #expect(ads.fields == ["entitlements"])
        #expect(ads.before?["entitlements"]?["no_ads"]?["active"]?.boolValue == true)
        #expect(ads.after?["entitlements"]?["premium"]?["active"]?.boolValue == true)
        #expect(ads.after?["entitlements"]?["no_ads"] == nil)
        #expect(try harness.documents() == before)  // a dry run changes nothing

        // Applied for real, the new rule is what the service serves.
        let applied = try harness.app.projections.engine.run(ReplayOptions(catalog: catalog))
        #expect(applied.changedUsers.count == 3)
        let read = try harness.request("GET", "/v1/users/u-ads-2")
        #expect(read.json["entitlements"]?["premium"]?["active"]?.boolValue == true)
    }

    @Test func aDryRunSeesEventsCommittedBehindALongTransactionElsewhere() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        // A writer that took an xid and stays open holds the cluster-wide xid horizon back.
        let blocker = try harness.connection()
        try blocker.executeScript("BEGIN")
        _ = try blocker.query("SELECT pg_current_xact_id()")
        defer { try? blocker.executeScript("ROLLBACK") }
        _ = try harness.purchase(
            "u-late",
            ["productId": .string(TestService.removeAds), "type": .string("Non-Consumable"), "expiresDate": .null])
        let report = try harness.app.projections.engine.run(ReplayOptions(dryRun: true))
        #expect(report.events == (try harness.eventCount()))
        #expect(report.changedUsers.isEmpty, "\(report.changedUsers.prefix(3))")
    }

    @Test func replayWhileWritesContinueMissesNothingAndAppliesNothingTwice() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        try harness.runScenarios()
        for index in 0..<20 {
            try harness.purchase(
                "w-\(index)",
                ["productId": .string(TestService.coins), "type": .string("Consumable"), "expiresDate": .null])
        }
        let stop = Atomic<Bool>(false)
        let writes = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let writers = (0..<2).map { writer in
            Thread {
                var round = 0
                while !stop.load(ordering: .relaxed) {
                    round += 1
                    let user = "w-\((round * 7 + writer) % 20)"
                    do {
                        if round % 3 == 0 {
                            try harness.purchase("c-\(writer)-\(round)", ["productId": .string(TestService.monthly)])
                        } else {
                            let response = try harness.debit(user, 1, key: "k-\(writer)-\(round)")
                            if response.status != 200 && response.status != 409 {
                                failures.withLock { $0.append("debit \(response.status) \(response.json)") }
                            }
                        }
                        writes.add(1, ordering: .relaxed)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        for writer in writers { writer.start() }
        try eventually("20 writes before the replay", within: 60) { writes.load(ordering: .relaxed) >= 20 }
        // Small batches make the replay slow enough for the writers to overlap every phase, and
        // the catch-up waits until the writers have appended more after the bulk read.
        var options = ReplayOptions()
        options.batchSize = 25
        options.beforeCatchUp = {
            let target = writes.load(ordering: .relaxed) + 6
            try? eventually("six more writes during the replay", within: 60, every: 0.005) {
                writes.load(ordering: .relaxed) >= target || stop.load(ordering: .relaxed)
            }
            // The catch-up reads below the cluster-wide xid horizon: another test's open
            // transaction on the shared cluster (this suite's blocker test, run in parallel) would
            // hide those writes from it. Wait until they are below it, as the feed tests do.
            try? ChangeFeedTests.settle(harness.conninfo)
        }
        let report = try harness.app.projections.engine.run(options)
        let during = writes.load(ordering: .relaxed)
        try eventually("writers to keep writing after the swap", within: 30) {
            writes.load(ordering: .relaxed) > during + 2
        }
        stop.store(true, ordering: .relaxed)
        try eventually("the writers to stop", within: 60) { writers.allSatisfy(\.isFinished) }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(report.swapped)
        #expect(report.catchUpEvents > 0, "the writers appended while the replay read")
        #expect(writes.load(ordering: .relaxed) > during, "writers kept writing after the swap")

        // Every event once: a fresh dry run folds exactly the log and finds every live document
        // (written by the replay or by a writer across the swap) equal to the log's.
        let check = try harness.app.projections.engine.run(ReplayOptions(dryRun: true))
        #expect(check.events == (try harness.eventCount()))
        #expect(check.changedUsers.isEmpty, "\(check.changedUsers.prefix(3))")
        #expect(check.changedChainOwners == 0)
        #expect(check.inFlightUsers == 0)
        // Balances equal purchases minus debits recorded in the log, user by user.
        let connection = try harness.connection()
        for index in 0..<20 {
            let user = "w-\(index)"
            let debited = try connection.query(
                """
                SELECT coalesce(sum((data->>'amount')::bigint), 0) AS n FROM es.events
                WHERE stream_id = (SELECT 'user:' || subject FROM identity.subjects WHERE user_id = $1)
                  AND type = 'BalanceDebited'
                """, [user]
            ).int64(0, "n")!
            let read = try harness.request("GET", "/v1/users/\(user)")
            #expect(read.json["balances"]?["coins"]?.int64Value == 100 - debited, "\(user)")
        }
    }

    @Test func aSecondReplayWhileOneRunsIsRefused() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        let connection = try harness.connection()
        // Another process (a CLI replay) holds the replay lease.
        try connection.execute(
            """
            INSERT INTO ops.leases (name, holder, claim, token, acquired_at, renewed_at, expires_at)
            VALUES ($1, 'elsewhere:replay:1', 'another-claim', nextval('ops.lease_tokens'), now(), now(), now() + interval '1 hour')
            """, [ReplayEngine.leaseName])
        let response = try harness.request("POST", "/v1/admin/replay", .object(["dryRun": .bool(true)]))
        #expect(response.status == 409)
        #expect(response.json["code"]?.stringValue == "replay_in_progress")
    }

    @Test func replayNeedsTheAdminScope() throws {
        let harness = try TestService.scenarios()
        defer { harness.stop() }
        let connection = try harness.connection()
        let reader = try APIKeys().create(name: "reader", scopes: ["read"], on: connection)
        var request = URLRequest(url: URL(string: harness.app.url + "/v1/admin/replay")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(reader)", forHTTPHeaderField: "Authorization")
        let status = Mutex<Int>(0)
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { _, response, _ in
            status.withLock { $0 = (response as? HTTPURLResponse)?.statusCode ?? 0 }
            done.signal()
        }.resume()
        done.wait()
        #expect(status.withLock { $0 } == 403)
        #expect(try harness.request("POST", "/v1/admin/replay", auth: false).status == 401)
    }
}
