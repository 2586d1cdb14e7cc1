import EventStore
import HTTP
import Infrastructure
import JSON

/// `GET /v1/admin/metrics/overview?from=&to=&interval=day|week|month[&environment=][&currency=][&asOf=]`
/// (admin, api.md §6, §3.1): the console's charts from the analytics projection (`OverviewMetrics`),
/// one store environment at a time (Production unless asked), never several summed; with
/// `currency`, every money series converted into it (`ExchangeRates`); with `asOf`, every series
/// as it was answered at that instant (the facts and rates recorded by then).
struct OverviewRoutes: Sendable {
    let service: LedgerService

    func register(on router: inout Router) {
        router.add("GET", "/v1/admin/metrics/overview", scope: "admin") { request, _ in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let query = try Self.parameters(request, now: service.clock())
                let rows = try service.read { connection throws(ServiceError) -> Rows in
                    try database { () throws(DatabaseError) in
                        try connection.query(
                            OverviewMetrics.query(
                                from: query.from, to: query.to, interval: query.interval,
                                environment: query.environment,
                                currency: query.currency, asOf: query.asOf))
                    }
                }
                return .json(
                    200,
                    OverviewMetrics.json(
                        OverviewMetrics.decode(rows), from: query.from, to: query.to, interval: query.interval,
                        environment: query.environment, currency: query.currency, asOf: query.asOf))
            }
        }
    }

    struct Parameters: Equatable {
        var from: Int64
        var to: Int64
        var interval: OverviewMetrics.Interval
        var environment: String
        /// The reporting currency every money series is converted into; nil: each in its own.
        var currency: String? = nil
        /// Answer from the facts and rates recorded up to this instant; nil: everything recorded.
        var asOf: Int64? = nil
    }

    /// The environments one answer may show; Production unless asked (api.md §3.1: no money
    /// figure mixes them, so there is no "all").
    static let environments = ["Production", "Sandbox", "Xcode", "LocalTesting"]

    /// Defaults: the last 30 days (up to `asOf` when given), by day, Production.
    static func parameters(_ request: HTTPRequest, now: Int64) throws(ServiceError) -> Parameters {
        func instant(_ name: String) throws(ServiceError) -> Int64? {
            guard let text = request.query[name] else { return nil }
            guard let instant = RFC3339.parse(text) else {
                throw .invalidRequest("\(name) must be an RFC 3339 timestamp")
            }
            return instant
        }
        // With asOf, "now" is asOf: `?asOf=T` alone answers as the default view did at T.
        let asOf = try instant("asOf")
        let to = try instant("to") ?? asOf ?? now
        let from = try instant("from") ?? to - 30 * 86_400_000
        guard from < to else { throw .invalidRequest("from must be before to") }
        var interval = OverviewMetrics.Interval.day
        if let word = request.query["interval"] {
            guard let known = OverviewMetrics.Interval(rawValue: word) else {
                throw .invalidRequest("interval must be day, week or month")
            }
            interval = known
        }
        guard OverviewMetrics.bucketCount(from: from, to: to, interval: interval) <= Int64(OverviewMetrics.maxBuckets)
        else {
            throw .invalidRequest(
                "from…to spans more than \(OverviewMetrics.maxBuckets) \(interval.rawValue)s: use a shorter range or a longer interval"
            )
        }
        let environment = request.query["environment"] ?? "Production"
        guard environments.contains(environment) else {
            throw .invalidRequest(
                "environment must be Production (the default), Sandbox, Xcode or LocalTesting, got \"\(environment)\"")
        }
        let currency = request.query["currency"]
        if let currency, !ExchangeRates.isCurrency(currency) {
            throw .invalidRequest(
                "currency must be an ISO 4217 code (three capital letters, e.g. USD), got \"\(currency)\"")
        }
        return Parameters(
            from: from, to: to, interval: interval, environment: environment, currency: currency, asOf: asOf)
    }
}
