import HTTP
import JSON
import Synchronization
import Testing

@Suite struct RouterTests {
    private func get(_ path: String, headers: [String: String] = [:]) -> HTTPRequest {
        HTTPRequest(method: "GET", path: path, headers: headers)
    }

    /// The router's own refusals are written with the request's id, as every handler's problem
    /// is (nothing parses them again to add it).
    @Test func everyRefusalOfTheRouterCarriesTheRequestId() throws {
        var router = Router(authenticator: { $0 == "good" ? ["read"] : nil })
        router.add("GET", "/open") { _, _ in .text(200, "x") }
        router.add("GET", "/read", scope: "read") { _, _ in .text(200, "x") }
        router.add("GET", "/admin", scope: "admin") { _, _ in .text(200, "x") }
        let cases: [(HTTPRequest, Int)] = [
            (HTTPRequest(method: "GET", path: "/nowhere", requestId: "r-404"), 404),
            (HTTPRequest(method: "DELETE", path: "/open", requestId: "r-405"), 405),
            (HTTPRequest(method: "GET", path: "/read", requestId: "r-401"), 401),
            (
                HTTPRequest(
                    method: "GET", path: "/admin", headers: ["authorization": "Bearer good"], requestId: "r-403"), 403
            ),
        ]
        for (request, status) in cases {
            let response = router.handle(request)
            #expect(response.status == status)
            #expect(response.headers["Content-Type"] == "application/problem+json")
            #expect(try JSONValue.parse(response.body)["requestId"]?.stringValue == request.requestId)
        }
    }

    @Test func literalSegmentsWinOverParameters() {
        var router = Router()
        router.add("GET", "/users/{id}") { _, p in .text(200, "id=\(p["id"]!)") }
        router.add("GET", "/users/me") { _, _ in .text(200, "me") }
        router.add("GET", "/users/{id}/events") { _, p in .text(200, "events of \(p["id"]!)") }
        #expect(router.handle(get("/users/me")).body == Array("me".utf8))
        #expect(router.handle(get("/users/u%201")).body == Array("id=u 1".utf8))
        #expect(router.handle(get("/users/me/events")).body == Array("events of me".utf8))
    }

    @Test func trailingSlashesAndEmptySegmentsDoNotMatch() {
        var router = Router()
        router.add("GET", "/users/{id}") { _, _ in .text(200, "x") }
        #expect(router.handle(get("/users/")).status == 404)
        #expect(router.handle(get("/users/a/")).status == 404)
        #expect(router.handle(get("/")).status == 404)
    }

    @Test func headFallsBackToGetAndAllowListsEveryMethod() throws {
        var router = Router()
        router.add("GET", "/thing") { _, _ in .text(200, "x") }
        router.add("POST", "/thing") { _, _ in .text(201, "y") }
        #expect(router.handle(HTTPRequest(method: "HEAD", path: "/thing")).status == 200)
        let refused = router.handle(HTTPRequest(method: "DELETE", path: "/thing"))
        #expect(refused.status == 405)
        #expect(refused.headers["Allow"] == "GET, POST")
        #expect(try JSONValue.parse(refused.body)["code"]?.stringValue == "method_not_allowed")
    }

    @Test func routesListEveryMethodPatternAndScope() {
        let routes = TestRoutes.router().routes
        #expect(routes.count == 5)
        #expect(routes.contains { $0.method == "GET" && $0.pattern == "/v1/users/{userId}" && $0.scope == "read" })
        #expect(routes.contains { $0.method == "GET" && $0.pattern == "/hello" && $0.scope == nil })
    }

    @Test func bearerSchemeIsCaseInsensitiveAndOtherSchemesAreRefused() {
        let router = TestRoutes.router()
        #expect(router.handle(get("/v1/users/u", headers: ["authorization": "bearer reader-key"])).status == 200)
        #expect(router.handle(get("/v1/users/u", headers: ["authorization": "Basic cmVhZGVyLWtleQ=="])).status == 401)
        #expect(router.handle(get("/v1/users/u", headers: ["authorization": "Bearer "])).status == 401)
    }

    /// The scheme in any case, the token trimmed of spaces and tabs only: what the
    /// authenticator is asked about, for each way a client may write the header.
    @Test func theAuthenticatorGetsTheTrimmedTokenAfterTheSchemeInAnyCase() {
        let asked = Mutex<[String]>([])
        var router = Router(authenticator: { token in
            asked.withLock { $0.append(token) }
            return ["read"]
        })
        router.add("GET", "/private", scope: "read") { _, _ in .text(200, "ok") }
        let headers = ["BEARER \t reader-key \t", "bEaReR a b", "Bearer  \t ", "Bearerx key", "Bearer", "Bäarer key"]
        let statuses = headers.map { router.handle(get("/private", headers: ["authorization": $0])).status }
        #expect(statuses == [200, 200, 401, 401, 401, 401])
        #expect(asked.withLock { $0 } == ["reader-key", "a b"])
    }

    /// A path is cut at every `/` byte, each segment decoded after: `%2F` stays inside its segment.
    @Test func anEncodedSlashStaysInItsSegmentAndEmptySegmentsCount() {
        var router = Router()
        router.add("GET", "/users/{id}") { _, p in .text(200, "id=\(p["id"]!)") }
        router.add("GET", "/users/{id}/events") { _, p in .text(200, "events of \(p["id"]!)") }
        #expect(router.handle(get("/users/a%2Fb")).body == Array("id=a/b".utf8))
        #expect(router.handle(get("/users/a%2Fb/events")).body == Array("events of a/b".utf8))
        #expect(router.handle(get("/users//events")).status == 404)
        #expect(router.handle(get("//users/a")).status == 404)
    }

    @Test func observerSeesTheRoutePatternNotTheRawPath() {
        let seen = Mutex<[String]>([])
        let router = TestRoutes.router { method, route, status, seconds in
            seen.withLock { $0.append("\(method) \(route) \(status) \(seconds >= 0)") }
        }
        _ = router.handle(get("/v1/users/u-42", headers: ["authorization": "Bearer reader-key"]))
        _ = router.handle(get("/v1/users/u-43"))
        _ = router.handle(get("/missing/1"))
        #expect(
            seen.withLock { $0 } == [
                "GET /v1/users/{userId} 200 true", "GET /v1/users/{userId} 401 true", "GET unmatched 404 true",
            ])
    }

    @Test func problemCarriesExtraMembersButNeverOverridesTheStandardOnes() throws {
        let response = HTTPResponse.problem(
            status: 409, code: "insufficient_balance", title: "Conflict", detail: "Only 5 coins.",
            extra: ["balance": .number("5"), "code": .string("hijack")])
        let json = try JSONValue.parse(response.body)
        #expect(json["balance"]?.int64Value == 5)
        #expect(json["code"]?.stringValue == "insufficient_balance")
        #expect(json["status"]?.int64Value == 409)
        #expect(response.headers["Content-Type"] == "application/problem+json")
    }
}
