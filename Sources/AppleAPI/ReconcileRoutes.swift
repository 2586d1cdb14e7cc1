import AppStore
import HTTP
import Infrastructure
import JSON

/// `POST /v1/admin/reconcile` (admin, api.md §5): ask Apple's notification history now for what
/// never reached this service, and record it.
package struct ReconcileRoutes: Sendable {
    package let apple: AppleRequests
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { apple.ledger }

    package init(apple: AppleRequests) {
        self.apple = apple
    }

    package func register(on router: inout Router) {
        router.add("POST", "/v1/admin/reconcile", scope: "admin") { request, _ in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let query = try Self.query(request.body, now: service.clock())
                let report = try apple.reconcile(
                    since: query.since, until: query.until, bundleId: query.bundleId, environment: query.environment,
                    context: RequestContext(requestId: request.requestId, source: "reconcile"))
                service.logger.info(
                    "reconcile",
                    [
                        "request.id": request.requestId, "fetched": String(report.fetched),
                        "recorded": String(report.recorded), "duplicates": String(report.duplicates),
                        "rejected": String(report.rejected),
                    ])
                return .json(200, report.json())
            }
        }
    }

    package struct Query {
        package var since: Int64
        package var until: Int64
        package var bundleId: String?
        package var environment: String?
    }

    /// Apple keeps 180 days of notification history.
    package static let historyDays: Int64 = 180

    /// The body `{"since": RFC 3339, "until"?, "bundleId"?, "environment"?}`, checked.
    package static func query(_ body: [UInt8], now: Int64) throws(ServiceError) -> Query {
        guard let value = try? JSONValue.parse(body), case .object(let fields) = value else {
            throw .invalidRequest("the body must be a JSON object with since (RFC 3339)")
        }
        func instant(_ name: String) throws(ServiceError) -> Int64? {
            guard let field = fields[name] else { return nil }
            guard let text = field.stringValue, let instant = RFC3339.parse(text) else {
                throw .invalidRequest("\(name) must be an RFC 3339 timestamp")
            }
            return instant
        }
        func text(_ name: String) throws(ServiceError) -> String? {
            guard let field = fields[name] else { return nil }
            guard let text = field.stringValue, !text.isEmpty else {
                throw .invalidRequest("\(name) must be a non-empty string")
            }
            return text
        }
        guard let since = try instant("since") else { throw .invalidRequest("since is required (RFC 3339)") }
        let until = try instant("until") ?? now
        guard since < until else { throw .invalidRequest("since must be before until") }
        guard since >= now - historyDays * 86_400_000 else {
            throw .invalidRequest("since must be within the last \(historyDays) days (Apple keeps no older history)")
        }
        let environment = try text("environment")
        if let environment, AppStoreServerEnvironment(rawValue: environment) == nil {
            throw .invalidRequest("environment must be Production, Sandbox or LocalTesting")
        }
        return Query(since: since, until: until, bundleId: try text("bundleId"), environment: environment)
    }
}
