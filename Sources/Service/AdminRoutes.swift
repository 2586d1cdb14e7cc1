import EventStore
import HTTP
import JSON

/// api.md §2 Operate: replay and projection status (admin scope).
struct AdminRoutes: Sendable {
    let engine: ReplayEngine
    let service: LedgerService

    func register(on router: inout Router) {
        router.add("POST", "/v1/admin/replay", scope: "admin") { request, _ in
            respond(request) { () throws(ServiceError) in
                let options = try replayOptions(request.body)
                let report = try engine.run(options)
                engine.logger.info("replay", [
                    "request.id": request.requestId, "dryRun": String(options.dryRun), "events": String(report.events),
                    "changedUsers": String(report.changedUsers.count), "durationMs": String(report.durationMs),
                ])
                return .json(200, report.jsonBytes())
            }
        }
        router.add("GET", "/v1/admin/projections", scope: "admin") { request, _ in
            respond(request) { () throws(ServiceError) in
                .json(200, try service.read { connection throws(ServiceError) in
                    try database { () throws(DatabaseError) in try ProjectionVersions.status(on: connection) }
                })
            }
        }
    }

    private func respond(_ request: HTTPRequest, _ body: () throws(ServiceError) -> HTTPResponse) -> HTTPResponse {
        do {
            return try body()
        } catch {
            if case .internalError(let detail) = error {
                service.logger.error("admin request failed", ["request.id": request.requestId, "error": detail])
            }
            return ErrorMapping.response(for: error, requestId: request.requestId)
        }
    }

    /// `{"dryRun": true, "projections": ["users"]}` (every field optional; `projection` accepted too).
    func replayOptions(_ body: [UInt8]) throws(ServiceError) -> ReplayOptions {
        var options = ReplayOptions()
        guard body.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else { return options }
        guard let json = try? JSONValue.parse(body), let object = json.objectValue else {
            throw .invalidRequest("body must be a JSON object like {\"dryRun\": true}")
        }
        if let dryRun = object["dryRun"] {
            guard let flag = dryRun.boolValue else { throw .invalidRequest("dryRun must be a boolean") }
            options.dryRun = flag
        }
        if let single = object["projection"]?.stringValue { options.projections.insert(single) }
        if let list = object["projections"] {
            guard let names = list.arrayValue?.compactMap(\.stringValue) else {
                throw .invalidRequest("projections must be an array of names")
            }
            options.projections.formUnion(names)
        }
        return options
    }
}
