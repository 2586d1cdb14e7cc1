import EventStore
import HTTP
import Infrastructure

/// Unauthenticated operational endpoints: liveness, readiness, metrics and the API document.
struct OperationsRoutes: Sendable {
    let pool: ConnectionPool
    let metrics: ServiceMetrics
    let drain: DrainSwitch
    /// Unready while the database's projections were built by newer code (rolling upgrades).
    var projectionVersions: ProjectionVersionWatch? = nil
    /// Where `ErrorMapping` logs what an operator must see of a failed request.
    let logger: Logger

    func register(on router: inout Router) {
        router.add("GET", "/healthz", inline: true) { _, _ in .json(200, Array(#"{"status":"ok"}"#.utf8)) }
        router.add("GET", "/readyz") { request, _ in
            if drain.isDraining {
                // Asked to stop: out of the balancer's rotation first, still serving meanwhile.
                var response = HTTPResponse.problem(
                    status: 503, code: "draining", title: "Draining",
                    detail: "this instance is stopping; it still serves requests sent to it",
                    extra: ["requestId": .string(request.requestId)])
                response.headers["Retry-After"] = "1"
                return response
            }
            if let ahead = projectionVersions?.projectionsAhead.first {
                return ErrorMapping.answer(.projectionVersionAhead(ahead), requestId: request.requestId, logger: logger)
            }
            if pool.ping(timeout: 2) { return .json(200, Array(#"{"status":"ready"}"#.utf8)) }
            var response = HTTPResponse.problem(
                status: 503, code: "store_unavailable", title: "Store unavailable",
                detail: "PostgreSQL is unreachable", extra: ["requestId": .string(request.requestId)])
            response.headers["Retry-After"] = "1"
            return response
        }
        router.add("GET", "/metrics", inline: true) { _, _ in
            HTTPResponse(
                status: 200, headers: ["Content-Type": MetricsRegistry.contentType], body: metrics.registry.render())
        }
        let document = Array(OpenAPIDocument.json.utf8)
        router.add("GET", "/openapi.json", inline: true) { _, _ in .json(200, document) }
    }
}
