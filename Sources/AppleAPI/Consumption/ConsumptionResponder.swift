import EventStore
import HTTP
import Infrastructure
import Synchronization

/// Answers Apple's CONSUMPTION_REQUESTs in the background (docs/api.md §5): every `poll`, the
/// pending requests whose attempt is due (`apple.consumption_requests`, queued when the
/// notification was recorded) are answered through `AppleRequests.answerConsumptionRequest`.
/// One instance runs it (a leased BackgroundJob: the `consumption-responder` lease); the chain's lock and
/// the attempt count make an attempt count once even if two instances overlap (a holder stalled
/// past its lease); at worst Apple is sent the same answer to one request twice.
package final class ConsumptionResponder: Sendable {
    package static let leaseName = "consumption-responder"
    /// Requests handled per round at most (each may wait on Apple).
    package static let batch = 20

    package let apple: AppleRequests
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { apple.ledger }
    package let conninfo: String
    package let poll: Double
    package let leases: LeaseHolder
    package let answers: Counter

    package init(
        apple: AppleRequests, conninfo: String, poll: Double = 2, leases: LeaseHolder, registry: MetricsRegistry
    ) {
        self.apple = apple
        self.conninfo = conninfo
        self.leases = leases
        self.poll = poll
        answers = registry.counter(
            "iap_consumption_answers_total",
            help:
                "CONSUMPTION_REQUESTs handled, by what came of it (accepted, rejected, unavailable; expired, skipped: nothing sent).",
            labels: ["bundle_id", "result"])
        registry.gauge(
            "iap_consumption_requests_pending", help: "CONSUMPTION_REQUESTs still to answer.", labels: []
        ) { [service] in
            let rows = try? service.read { connection throws(ServiceError) -> Rows in
                try database { () throws(DatabaseError) in try connection.query(ConsumptionRequestsTable.pendingCount) }
            }
            return [([], rows.flatMap { $0[0, 0] }.flatMap(Double.init) ?? 0)]
        }
    }

    /// The responder as a background job (JobRunner); nil when no app has a `consumption`
    /// config. Made once: it takes the job's lease.
    package func makeJob() -> BackgroundJob? {
        guard service.configuration.apps.contains(where: { $0.consumption != nil }) else { return nil }
        return BackgroundJob(
            name: Self.leaseName, interval: poll, holder: .leaseHolder(leases.lease(Self.leaseName)),
            connections: .dedicated(conninfo: conninfo, session: ServiceRole.session(service.pool.session.poolMode))
        ) { [self] connection, round in try answerDue(on: connection, isStopping: round.shouldStop) }
    }

    private func answerDue(on connection: Connection, isStopping: () -> Bool) throws {
        // Built by newer code: nothing could be recorded here (ProjectionVersionWatch said why, once).
        guard service.projectionVersions.projectionsAhead.isEmpty else { return }
        let due = ConsumptionRequestsTable.decode(
            try connection.query(ConsumptionRequestsTable.due(now: service.clock(), limit: Self.batch)))
        for request in due {
            guard !isStopping() else { return }
            let context = RequestContext(
                requestId: "consumption-\(request.notificationUUID)-\(request.attempts + 1)",
                source: "consumption-responder")
            do {
                guard let report = try apple.answerConsumptionRequest(request, context: context) else {
                    continue
                }
                let result = report.outcome?.rawValue ?? report.settlement.state.rawValue
                answers.increment([report.bundleId ?? "", result])
                let fields = [
                    "notificationUUID": request.notificationUUID, "transactionId": request.transactionId,
                    "result": result, "state": report.settlement.state.rawValue,
                    "attempt": String(report.settlement.attempts), "detail": report.settlement.lastError ?? "",
                ]
                if report.outcome == .accepted {
                    service.logger.info("consumption information sent", fields)
                } else {
                    service.logger.warning("consumption request not answered", fields)
                }
            } catch {
                service.logger.warning(
                    "consumption request failed",
                    [
                        "notificationUUID": request.notificationUUID, "error": "\(error)",
                    ])
            }
        }
    }
}
