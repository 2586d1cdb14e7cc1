import EventStore
import HTTP
import Infrastructure
import JSON

/// The admin routes of webhook delivery (api.md §4, admin scope): each endpoint's health, its
/// deliveries with every attempt, and redelivery. They read and queue through the table; the
/// delivering instance (whichever holds the endpoint's lease) picks queued ones up within its
/// next round.
package struct WebhookAdminRoutes: Sendable {
    package let service: LedgerService

    package init(service: LedgerService) {
        self.service = service
    }
    package var endpoints: [WebhookEndpoint] { service.configuration.webhooks }
    package static let statuses: Set<String> = ["pending", "delivered", "failed", "dead"]
    package static let defaultLimit = 100
    package static let maxLimit = 1000
    package static let maxIds = 1000

    package func register(on router: inout Router) {
        router.add("GET", "/v1/admin/webhooks", scope: "admin") { request, _ in
            respond(request) { () throws(ServiceError) in try overview() }
        }
        router.add("GET", "/v1/admin/webhooks/{name}/deliveries", scope: "admin") { request, parameters in
            respond(request) { () throws(ServiceError) in
                try deliveries(endpoint: try endpoint(parameters["name"]), query: request.query)
            }
        }
        router.add("POST", "/v1/admin/webhooks/{name}/redeliver", scope: "admin") { request, parameters in
            respond(request) { () throws(ServiceError) in
                try redeliver(
                    endpoint: try endpoint(parameters["name"]), body: request.body, requestId: request.requestId)
            }
        }
    }

    private func respond(_ request: HTTPRequest, _ body: () throws(ServiceError) -> HTTPResponse) -> HTTPResponse {
        ErrorMapping.respond(service.logger, request, body)
    }

    private func endpoint(_ name: String?) throws(ServiceError) -> WebhookEndpoint {
        guard let name, let endpoint = endpoints.first(where: { $0.name == name }) else {
            let known = endpoints.map(\.name).joined(separator: ", ")
            throw .notFound(
                "no webhook endpoint named \"\(name ?? "")\" is configured (configured: \(known.isEmpty ? "none" : known))"
            )
        }
        return endpoint
    }

    private func overview() throws(ServiceError) -> HTTPResponse {
        let summaries = try service.read { connection throws(ServiceError) in
            try database { () throws(DatabaseError) in
                WebhookDeliveriesTable.decodeSummary(try connection.query(WebhookDeliveriesTable.summary))
            }
        }
        let now = Timestamp.nowMillis()
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("endpoints")
        w.beginArray()
        for endpoint in endpoints {
            let summary = summaries[endpoint.name] ?? .init()
            w.beginObject()
            w.key("name")
            w.string(endpoint.name)
            w.key("url")
            w.string(endpoint.url)
            w.key("counts")
            w.beginObject()
            for status in ["pending", "delivered", "failed", "dead"] {
                w.key(status)
                w.int(summary.counts[status] ?? 0)
            }
            w.endObject()
            w.key("oldestPendingSeconds")
            w.int(summary.oldestOpenQueuedAt.map { max(0, now - $0) / 1000 } ?? 0)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return .json(200, w.bytes)
    }

    private func deliveries(endpoint: WebhookEndpoint, query: [String: String]) throws(ServiceError) -> HTTPResponse {
        if let unknown = query.keys.sorted().first(where: { $0 != "status" && $0 != "limit" }) {
            throw .invalidRequest("unknown query parameter \"\(unknown)\" (known: status, limit)")
        }
        let status = query["status"]
        if let status, !Self.statuses.contains(status) {
            throw .invalidRequest("status must be one of pending, delivered, failed, dead; got \"\(status)\"")
        }
        var limit = Self.defaultLimit
        if let text = query["limit"] {
            guard let value = Int(text), (1...Self.maxLimit).contains(value) else {
                throw .invalidRequest("limit must be an integer 1…\(Self.maxLimit); got \"\(text)\"")
            }
            limit = value
        }
        let (listed, attempts) = try service.read { connection throws(ServiceError) in
            try database { () throws(DatabaseError) in
                let listed = WebhookDeliveriesTable.decodeList(
                    try connection.query(
                        WebhookDeliveriesTable.list(endpoint: endpoint.name, status: status, limit: limit)))
                let attempts =
                    listed.isEmpty
                    ? []
                    : WebhookDeliveriesTable.decodeAttempts(
                        try connection.query(
                            WebhookDeliveriesTable.attempts(endpoint: endpoint.name, seqs: listed.map(\.seq))))
                return (listed, attempts)
            }
        }
        var bySeq: [Int64: [WebhookDeliveriesTable.Attempt]] = [:]
        for attempt in attempts { bySeq[attempt.seq, default: []].append(attempt) }
        var w = JSONWriter(capacity: 256 + listed.count * 256)
        w.beginObject()
        w.key("endpoint")
        w.string(endpoint.name)
        w.key("deliveries")
        w.beginArray()
        for delivery in listed {
            w.beginObject()
            w.key("id")
            w.string(StoredChange.id(seq: delivery.seq))
            w.key("userId")
            w.stringOrNull(delivery.userId)
            w.key("status")
            w.string(delivery.status)
            w.key("attemptCount")
            w.int(delivery.attempts)
            w.key("queuedAt")
            w.string(RFC3339.format(delivery.queuedAt))
            w.key("nextAttemptAt")
            if delivery.status == "pending" || delivery.status == "failed" {
                w.string(RFC3339.format(delivery.nextAttemptAt))
            } else {
                w.null()
            }
            w.key("deliveredAt")
            if let at = delivery.deliveredAt { w.string(RFC3339.format(at)) } else { w.null() }
            w.key("attempts")
            w.beginArray()
            for attempt in bySeq[delivery.seq] ?? [] {
                w.beginObject()
                w.key("at")
                w.string(RFC3339.format(attempt.at))
                w.key("httpStatus")
                w.intOrNull(attempt.httpStatus.map(Int64.init))
                w.key("error")
                w.stringOrNull(attempt.error)
                w.key("durationMs")
                w.int(attempt.durationMs)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return .json(200, w.bytes)
    }

    /// `{"ids": ["chg_…"]}` or `{"status": "dead"|"failed"}`.
    private func redeliver(endpoint: WebhookEndpoint, body: [UInt8], requestId: String) throws(ServiceError)
        -> HTTPResponse
    {
        guard let json = try? JSONValue.parse(body), let object = json.objectValue else {
            throw .invalidRequest("body must be a JSON object: {\"ids\": [\"chg_…\"]} or {\"status\": \"dead\"}")
        }
        if let unknown = object.keys.sorted().first(where: { $0 != "ids" && $0 != "status" }) {
            throw .invalidRequest("unknown field \"\(unknown)\" (known: ids, status)")
        }
        let now = Timestamp.nowMillis()
        var notFound: [String] = []
        let queued: Int
        switch (object["ids"], object["status"]) {
        case (let ids?, nil):
            guard let items = ids.arrayValue, !items.isEmpty, items.count <= Self.maxIds else {
                throw .invalidRequest("ids must be a non-empty array of at most \(Self.maxIds) change ids")
            }
            var seqs: [Int64] = []
            for (index, item) in items.enumerated() {
                guard let text = item.stringValue, let seq = StoredChange.seq(ofId: text) else {
                    throw .invalidRequest("ids[\(index)] is not a change id (chg_ and digits)")
                }
                seqs.append(seq)
            }
            // Opened as the feed serves them: an erased person's change is not found.
            let found = try service.read { connection throws(ServiceError) in
                let rows = try database { () throws(DatabaseError) in
                    try connection.query(ChangeFeedTable.changes(seqs: seqs))
                }
                return try ChangeFeedTable.opened(rows, on: connection).changes
            }
            let present = Set(found.map(\.seq))
            notFound = seqs.filter { !present.contains($0) }.map { StoredChange.id(seq: $0) }
            // The endpoint's filters still hold: an explicit redelivery never sends what it does not take.
            let accepted = WebhookPlanner.accepted(found, by: endpoint)
            notFound += found.filter { !endpoint.accepts(type: $0.type, environment: $0.environment) }.map(\.id)
            queued =
                accepted.isEmpty
                ? 0
                : try service.read { connection throws(ServiceError) in
                    try database { () throws(DatabaseError) in
                        try connection.query(
                            WebhookDeliveriesTable.requeue(endpoint: endpoint.name, changes: accepted, now: now)
                        ).count
                    }
                }
        case (nil, let status?):
            guard let word = status.stringValue, word == "dead" || word == "failed" else {
                throw .invalidRequest("status must be \"dead\" or \"failed\"")
            }
            queued = try service.read { connection throws(ServiceError) in
                try database { () throws(DatabaseError) in
                    try connection.query(
                        WebhookDeliveriesTable.requeue(endpoint: endpoint.name, status: word, now: now)
                    ).count
                }
            }
        default:
            throw .invalidRequest("give exactly one of ids or status")
        }
        service.logger.info(
            "webhooks: redeliver",
            [
                "request.id": requestId, "endpoint": endpoint.name, "queued": String(queued),
            ])
        var w = JSONWriter(capacity: 64)
        w.beginObject()
        w.key("queued")
        w.int(queued)
        w.key("notQueued")
        w.beginArray()
        for id in notFound { w.string(id) }
        w.endArray()
        w.endObject()
        return .json(200, w.bytes)
    }
}
