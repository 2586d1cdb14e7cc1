import EventStore
import HTTP
import Infrastructure
import JSON
import Replay

/// docs/api.md §2 Operate: every admin route (admin scope) is registered here; the work is the
/// replay engine's (ProjectionRuntime.engine) and AdminProjectionsDocument's.
struct AdminRoutes: Sendable {
    let engine: ReplayEngine
    let service: LedgerService
    let leases: LeaseHolder

    func register(on router: inout Router) {
        router.add("POST", "/v1/admin/replay", scope: "admin") { request, _ in
            respond(request) { () throws(ServiceError) in
                let options = try Self.replayOptions(request.body)
                let report = try engine.run(options)
                engine.logger.info(
                    "replay",
                    [
                        "request.id": request.requestId, "dryRun": String(options.dryRun),
                        "events": String(report.events),
                        "changedUsers": String(report.changedUsers.count), "durationMs": String(report.durationMs),
                    ])
                return .json(200, report.jsonBytes())
            }
        }
        router.add("GET", "/v1/admin/projections", scope: "admin") { request, _ in
            respond(request) { () throws(ServiceError) in
                .json(
                    200,
                    try service.read { connection throws(ServiceError) in
                        try database { () throws(DatabaseError) in
                            try AdminProjectionsDocument.json(on: connection, leases: leases)
                        }
                    })
            }
        }
    }

    private func respond(_ request: HTTPRequest, _ body: () throws(ServiceError) -> HTTPResponse) -> HTTPResponse {
        ErrorMapping.respond(service.logger, request, body)
    }

    /// The fields `POST /v1/admin/replay` accepts (`projection`, one name, is the older spelling).
    static let replayFields = ["dryRun", "projections", "projection"]

    /// `{"dryRun": true, "projections": ["users"]}`; an empty body or `{}` rebuilds every projection.
    /// Strict on purpose: a replay rebuilds and swaps live projections, so a typo or a wrong type
    /// must be a 400 that names the field, never a silent "all".
    static func replayOptions(_ body: [UInt8]) throws(ServiceError) -> ReplayOptions {
        var options = ReplayOptions()
        guard body.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else { return options }
        guard let json = try? JSONValue.parse(body), let object = json.objectValue else {
            throw .invalidRequest("body must be a JSON object like {\"dryRun\": true}")
        }
        if let unknown = object.keys.sorted().first(where: { !replayFields.contains($0) }) {
            throw .invalidRequest("unknown field \"\(unknown)\" (known: dryRun, projections)")
        }
        if let dryRun = object["dryRun"] {
            guard let flag = dryRun.boolValue else { throw .invalidRequest("dryRun must be a boolean") }
            options.dryRun = flag
        }
        if let single = object["projection"] {
            options.projections.insert(try projectionName(single, field: "projection"))
        }
        if let list = object["projections"] {
            guard let items = list.arrayValue else {
                throw .invalidRequest("projections must be an array of projection names (\(knownProjections))")
            }
            guard !items.isEmpty else {
                throw .invalidRequest("projections must not be empty; leave it out to rebuild every projection")
            }
            for (index, item) in items.enumerated() {
                options.projections.insert(try projectionName(item, field: "projections[\(index)]"))
            }
        }
        return options
    }

    private static var knownProjections: String { ProjectionVersions.all.map(\.name).joined(separator: ", ") }

    private static func projectionName(_ value: JSONValue, field: String) throws(ServiceError) -> String {
        guard let name = value.stringValue else {
            throw .invalidRequest("\(field) must be a projection name (\(knownProjections))")
        }
        guard ProjectionVersions.definition(named: name) != nil else {
            throw .invalidRequest("\(field): unknown projection \"\(name)\" (known: \(knownProjections))")
        }
        return name
    }
}
