import HTTP
import Infrastructure
import Ledger

/// `GET /v1/changes` (api.md §4): the pull feed, its long polls waiting in `ChangeFeedWaiters`.
package struct ChangeFeedRoutes: Sendable {
    package let service: LedgerService
    package let changeWaiters: ChangeFeedWaiters

    package init(service: LedgerService, changeWaiters: ChangeFeedWaiters) {
        self.service = service
        self.changeWaiters = changeWaiters
    }

    package func register(on router: inout Router) {
        router.add("GET", "/v1/changes", scope: "read", inline: true) { request, _ in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                var query = try ChangesQuery(request)
                // An alias names its target (api.md §7): the page holds the target's changes and
                // its aliases' from before the merge, and a long poll waits for the target's.
                query.userId = try query.userId.map { user throws(ServiceError) in try service.resolveUser(user) }
                return try changeWaiters.respond(query)
            }
        }
    }
}

/// The parameters of `GET /v1/changes`, checked.
package struct ChangesQuery {
    package var after: FeedCursor
    package var limit: Int
    /// Seconds an empty page may wait for the next change (0: answer at once).
    package var wait: Int
    package var userId: String?

    package static let maxWait = 60

    package init(_ request: HTTPRequest) throws(ServiceError) {
        if let text = request.query["after"] {
            guard let cursor = FeedCursor(text) else {
                throw .invalidRequest(
                    "after must be a cursor from this feed (a change's cursor or a page's next), got \"\(text)\"")
            }
            after = cursor
        } else {
            after = .start
        }
        limit = try Self.integer(request, "limit", default: 100, range: 1...1000)
        wait = try Self.integer(request, "wait", default: 0, range: 0...Self.maxWait)
        if let user = request.query["userId"] {
            guard !user.isEmpty, user.utf8.count <= 256, !RouteParameters.hasControlCharacters(user) else {
                throw .invalidRequest(
                    "userId must be a non-empty string of at most 256 bytes without control characters")
            }
            userId = user
        }
    }

    private static func integer(_ request: HTTPRequest, _ name: String, default fallback: Int, range: ClosedRange<Int>)
        throws(ServiceError) -> Int
    {
        guard let text = request.query[name] else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw .invalidRequest("\(name) must be an integer in \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }
}
