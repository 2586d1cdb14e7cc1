import AppStore
import EventStore
import Foundation
import HTTP
import Infrastructure
import Synchronization

/// The background reconciler (api.md §5, missed notifications): every `interval`, per app with a
/// `serverAPI` key and per store environment it accepts, asks Apple's notification history from
/// its checkpoint (less an overlap) to now and records what never arrived (`reconcile`), then
/// moves the checkpoint. One instance runs it (a leased BackgroundJob: the `reconciler` lease, taken over
/// within 10 s when its holder dies). Two runs overlapping (a holder stalled past its lease) do
/// no harm: what both find is a duplicate in the inbox, and the checkpoint only moves forward
/// (GREATEST in ReconcileCheckpointsTable.advance).
package final class Reconciler: Sendable {
    package static let leaseName = "reconciler"
    /// Read again before the checkpoint: Apple may list a notification a little after it signed it.
    package static let overlapMillis: Int64 = 10 * 60 * 1000
    /// A first run (no checkpoint yet) looks back this far.
    package static let firstLookBackMillis: Int64 = 24 * 60 * 60 * 1000

    package let apple: AppleRequests
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { apple.ledger }
    package let conninfo: String
    package let interval: Double
    /// How often the instance checks the lock and whether a run is due.
    package let poll: Double
    package let leases: LeaseHolder
    package let runs: Counter
    package let recorded: Counter
    /// After a failed run, when that app and environment is tried again (a minute, doubling up
    /// to the interval): a store that is down, or a test store's stand-in not running, is not
    /// asked — and warned about — every poll.
    private let retries: Mutex<[String: (at: Int64, waitMillis: Int64)]> = Mutex([:])

    package init(
        apple: AppleRequests, conninfo: String, interval: Double, poll: Double = 1, leases: LeaseHolder,
        registry: MetricsRegistry
    ) {
        self.apple = apple
        self.conninfo = conninfo
        self.leases = leases
        self.interval = interval
        self.poll = poll
        runs = registry.counter(
            "iap_reconcile_runs_total", help: "Reconciler runs per app and environment, by result (ok, failed).",
            labels: ["bundle_id", "environment", "result"])
        recorded = registry.counter(
            "iap_reconcile_recorded_total", help: "Notifications the reconciler recorded that had never arrived.",
            labels: ["bundle_id", "environment"])
        registry.gauge(
            "iap_reconcile_last_success_timestamp_seconds",
            help: "When the reconciler last succeeded, per app and environment (Unix seconds).",
            labels: ["bundle_id", "environment"]
        ) { [service] in
            let rows =
                (try? service.read { connection throws(ServiceError) -> Rows in
                    try database { () throws(DatabaseError) in try connection.query(ReconcileCheckpointsTable.all) }
                })
            guard let rows else { return [] }
            return (0..<rows.count).compactMap { row in
                guard let bundle = rows[row, 0], let environment = rows[row, 1],
                    let at = rows[row, 3].flatMap({ Double($0) })
                else { return nil }
                return ([bundle, environment], at / 1000)
            }
        }
    }

    /// The reconciler as a background job (JobRunner); nil when reconciling is off or no app has
    /// a key. Made once: it takes the job's lease.
    package func makeJob() -> BackgroundJob? {
        guard interval > 0, service.configuration.apps.contains(where: { $0.serverAPI != nil }) else { return nil }
        return BackgroundJob(
            name: "reconciler", interval: poll, holder: .leaseHolder(leases.lease(Self.leaseName)),
            connections: .dedicated(conninfo: conninfo, session: ServiceRole.session(service.pool.session.poolMode))
        ) { [self] connection, round in try runDue(on: connection, isStopping: round.shouldStop) }
    }

    /// Every app and environment whose last run is older than the interval (and, after a
    /// failure, whose retry is due).
    private func runDue(on connection: Connection, isStopping: () -> Bool) throws {
        // Built by newer code: nothing could be recorded here (ProjectionVersionWatch said why, once).
        guard service.projectionVersions.projectionsAhead.isEmpty else { return }
        let checkpoints = ReconcileCheckpointsTable.decode(try connection.query(ReconcileCheckpointsTable.all))
        let now = service.clock()
        for app in service.configuration.apps where app.serverAPI != nil {
            for environment in AppStoreServerEnvironment.allCases.map(\.rawValue)
            where app.environments.contains(environment) {
                guard !isStopping() else { return }
                let key = ReconcileCheckpointsTable.key(app.bundleId, environment)
                let checkpoint = checkpoints[key]
                if let checkpoint, Double(now - checkpoint.lastSuccessAt) < interval * 1000 { continue }
                let retry = retries.withLock { $0[key] }
                if let retry, now < retry.at { continue }
                let since = max(
                    (checkpoint?.reconciledUntil ?? now - Self.firstLookBackMillis) - Self.overlapMillis,
                    now - ReconcileRoutes.historyDays * 86_400_000 + 60_000)
                do {
                    let report = try apple.reconcile(
                        since: since, until: now, bundleId: app.bundleId, environment: environment,
                        context: RequestContext(
                            requestId: "reconciler-\(app.bundleId)-\(environment)-\(now)", source: "reconciler"))
                    try connection.execute(
                        ReconcileCheckpointsTable.advance(
                            bundleId: app.bundleId, environment: environment, until: now, now: now,
                            recorded: report.recorded))
                    _ = retries.withLock { $0.removeValue(forKey: key) }
                    runs.increment([app.bundleId, environment, "ok"])
                    recorded.increment([app.bundleId, environment], by: Double(report.recorded))
                    if report.recorded > 0 || report.rejected > 0 {
                        service.logger.info(
                            "reconcile: notifications that never arrived",
                            [
                                "bundleId": app.bundleId, "environment": environment,
                                "recorded": String(report.recorded), "rejected": String(report.rejected),
                            ])
                    }
                } catch {
                    let wait = min(Int64(interval * 1000), retry.map { $0.waitMillis * 2 } ?? 60_000)
                    retries.withLock { $0[key] = (now + wait, wait) }
                    runs.increment([app.bundleId, environment, "failed"])
                    service.logger.warning(
                        "reconcile failed",
                        [
                            "bundleId": app.bundleId, "environment": environment, "error": "\(error)",
                            "retryInSeconds": String(wait / 1000),
                        ])
                }
            }
        }
    }
}
