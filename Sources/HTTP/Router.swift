import JSON

/// Routes requests by method and path pattern (`/v1/users/{userId}`), checks Bearer keys
/// against a route's scope, and answers 401/403/404/405 as problem+json.
/// Build it once (`add`), then share it: matching is a walk down a segment tree, no regex.
public struct Router: Sendable {
    public typealias Handler = @Sendable (HTTPRequest, Parameters) -> HTTPResponse
    /// Maps a Bearer token to its scopes, or nil for an unknown token.
    public typealias Authenticator = @Sendable (String) -> Set<String>?
    /// Called once per response with the route *pattern* (not the raw path, to bound label
    /// cardinality), or "unmatched" for a 404.
    public typealias Observer = @Sendable (_ method: String, _ route: String, _ status: Int, _ seconds: Double) -> Void
    /// Asked when a request's key was not accepted: a response to send instead of 401 (e.g. 503
    /// when the key store could not be asked), or nil for the 401.
    public typealias Unauthenticated = @Sendable (HTTPRequest) -> HTTPResponse?

    /// The route label given to requests that matched no path.
    public static let unmatchedRoute = "unmatched"

    private struct Route: Sendable {
        let method: String
        let pattern: String
        let scope: String?
        /// Runs on the MHD worker even when the router has a `pool`.
        let inline: Bool
        let handler: Handler
    }

    private struct Node: Sendable {
        var literals: [String: Int] = [:]
        var parameter: (name: String, child: Int)?
        var pattern: String?
        var methods: [String: Int] = [:]  // method → index in `table`
    }

    private var nodes = [Node()]
    private var table: [Route] = []
    private let authenticator: Authenticator
    private let unauthenticated: Unauthenticated?
    public var observer: Observer?
    /// Where handlers run: with a pool, every route not added `inline` runs there (its key
    /// checked there too), its connection suspended meanwhile; without one, on the MHD worker.
    public var pool: HandlerPool?

    public init(
        authenticator: @escaping Authenticator = { _ in nil }, unauthenticated: Unauthenticated? = nil,
        observer: Observer? = nil
    ) {
        self.authenticator = authenticator
        self.unauthenticated = unauthenticated
        self.observer = observer
    }

    /// Every route in the order added, for documentation checks (OpenAPI).
    public var routes: [(method: String, pattern: String, scope: String?)] {
        table.map { ($0.method, $0.pattern, $0.scope) }
    }

    /// Adds a route. A `scope` makes it require `Authorization: Bearer <token>` whose scopes contain it.
    /// A pattern is `/`-separated literal or `{name}` segments; a clash is a programmer error and traps.
    /// `inline` routes run on the MHD worker even with a `pool`: handlers that never block
    /// (probes, metrics, static pages) or that suspend on their own event (long polls, cached reads).
    public mutating func add(
        _ method: String, _ pattern: String, scope: String? = nil, inline: Bool = false, _ handler: @escaping Handler
    ) {
        precondition(pattern.hasPrefix("/"), "route pattern must start with /: \(pattern)")
        var node = 0
        for segment in Self.segments(of: Substring(pattern)) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
                let name = String(segment.dropFirst().dropLast())
                if let existing = nodes[node].parameter {
                    precondition(
                        existing.name == name, "parameter {\(name)} clashes with {\(existing.name)} in \(pattern)")
                    node = existing.child
                } else {
                    nodes.append(Node())
                    nodes[node].parameter = (name, nodes.count - 1)
                    node = nodes.count - 1
                }
            } else {
                precondition(!segment.contains("{") && !segment.contains("}"), "malformed segment in \(pattern)")
                let literal = PercentDecoding.decode(segment, plusIsSpace: false)
                if let child = nodes[node].literals[literal] {
                    node = child
                } else {
                    nodes.append(Node())
                    nodes[node].literals[literal] = nodes.count - 1
                    node = nodes.count - 1
                }
            }
        }
        let method = method.uppercased()
        precondition(nodes[node].methods[method] == nil, "duplicate route \(method) \(pattern)")
        nodes[node].pattern = pattern
        nodes[node].methods[method] = table.count
        table.append(Route(method: method, pattern: pattern, scope: scope, inline: inline, handler: handler))
    }

    /// Routes one request; never throws, every failure is a problem+json response.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        guard let observer else { return route(request).response }
        let start = ContinuousClock.now
        let (response, pattern) = route(request)
        if let deferred = response.deferred {
            // Observed when the real answer is known: its status, and the whole wait.
            let method = request.method
            deferred.whenCompleted { final in
                observer(method, pattern, final.status, Self.seconds(since: start))
                return final
            }
            return response
        }
        observer(request.method, pattern, response.status, Self.seconds(since: start))
        return response
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = start.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
    }

    private func route(_ request: HTTPRequest) -> (response: HTTPResponse, pattern: String) {
        let path = Substring(request.path)
        let trimmed = path.hasPrefix("/") ? path.dropFirst() : path
        var captured: [(name: String, value: String)] = []
        guard let node = match(0, trimmed.isEmpty ? nil : trimmed, &captured), let pattern = nodes[node].pattern else {
            return (
                .problem(
                    status: 404, code: "not_found", title: "Not Found",
                    detail: "No route for \(request.method) \(request.path).", extra: Self.stamp(request)),
                Self.unmatchedRoute
            )
        }
        let methods = nodes[node].methods
        guard let index = methods[request.method] ?? (request.method == "HEAD" ? methods["GET"] : nil) else {
            var response = HTTPResponse.problem(
                status: 405, code: "method_not_allowed", title: "Method Not Allowed",
                detail: "\(pattern) does not allow \(request.method).", extra: Self.stamp(request))
            response.headers["Allow"] = methods.keys.sorted().joined(separator: ", ")
            return (response, pattern)
        }
        let route = table[index]
        let parameters = Parameters(captured)
        if let pool, !route.inline {
            let router = self
            return (pool.run { router.authorized(route, request, parameters) }, pattern)
        }
        return (authorized(route, request, parameters), pattern)
    }

    private func authorized(_ route: Route, _ request: HTTPRequest, _ parameters: Parameters) -> HTTPResponse {
        if let scope = route.scope, let refusal = authorize(request, scope: scope) { return refusal }
        return route.handler(request, parameters)
    }

    private func authorize(_ request: HTTPRequest, scope: String) -> HTTPResponse? {
        guard let token = Self.bearerToken(request.headers["authorization"]), let scopes = authenticator(token) else {
            if let replacement = unauthenticated?(request) { return replacement }
            var response = HTTPResponse.problem(
                status: 401, code: "unauthorized", title: "Unauthorized",
                detail: "A valid API key is required: Authorization: Bearer <key>.", extra: Self.stamp(request))
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        }
        guard scopes.contains(scope) else {
            return .problem(
                status: 403, code: "forbidden", title: "Forbidden",
                detail: "This API key lacks the \"\(scope)\" scope.", extra: Self.stamp(request))
        }
        return nil
    }

    /// The request id every problem carries (the same as the `X-Request-Id` header), written
    /// with the problem rather than added to it afterwards.
    private static func stamp(_ request: HTTPRequest) -> [String: JSONValue] {
        request.requestId.isEmpty ? [:] : ["requestId": .string(request.requestId)]
    }

    /// The token of `Bearer <token>` (the scheme in any case, spaces and tabs around the token
    /// dropped). Compared byte by byte: `prefix(7).lowercased()` and trimming by `Character`
    /// cost a grapheme walk and a new string on every authenticated request.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let utf8 = header.utf8
        guard utf8.count > 7 else { return nil }
        var start = utf8.startIndex
        for expected in "bearer ".utf8 {
            let byte = utf8[start]
            let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
            guard lower == expected else { return nil }
            start = utf8.index(after: start)
        }
        var end = utf8.endIndex
        while start < end, utf8[start] == UInt8(ascii: " ") || utf8[start] == UInt8(ascii: "\t") {
            start = utf8.index(after: start)
        }
        while start < end {
            let last = utf8[utf8.index(before: end)]
            guard last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") else { break }
            end = utf8.index(before: end)
        }
        return start == end ? nil : String(header[start..<end])
    }

    /// Depth-first, literal before parameter, so `/users/me` beats `/users/{id}`. `rest` is the
    /// path after the segments matched so far, nil when none is left: the segments are sliced
    /// off at each byte `/` as the walk goes and each decoded once (no array of segments, no second decoding of
    /// a parameter's value per request).
    private func match(_ node: Int, _ rest: Substring?, _ captured: inout [(name: String, value: String)]) -> Int? {
        guard let rest else { return nodes[node].pattern == nil ? nil : node }
        let segment: Substring
        let next: Substring?
        if let slash = rest.utf8.firstIndex(of: UInt8(ascii: "/")) {
            segment = rest[..<slash]
            next = rest[rest.utf8.index(after: slash)...]
        } else {
            segment = rest
            next = nil
        }
        let decoded = PercentDecoding.decode(segment, plusIsSpace: false)
        if !nodes[node].literals.isEmpty, let child = nodes[node].literals[decoded],
            let found = match(child, next, &captured)
        {
            return found
        }
        if let parameter = nodes[node].parameter, !segment.isEmpty {
            captured.append((parameter.name, decoded))
            if let found = match(parameter.child, next, &captured) { return found }
            captured.removeLast()
        }
        return nil
    }

    /// "/a/b" → ["a", "b"]; "/" → []; "/a/" → ["a", ""] (a trailing slash is a different path).
    /// For patterns, when a route is added; a request's path is walked in place (`match`).
    private static func segments(of path: Substring) -> [Substring] {
        let trimmed = path.hasPrefix("/") ? path.dropFirst() : path
        if trimmed.isEmpty { return [] }
        return trimmed.split(separator: "/", omittingEmptySubsequences: false)
    }
}
