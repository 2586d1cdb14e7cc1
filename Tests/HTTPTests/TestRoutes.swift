import HTTP

/// The routes the server tests talk to.
enum TestRoutes {
    static let keys: [String: Set<String>] = ["reader-key": ["read"], "writer-key": ["write"]]

    static func router(observer: Router.Observer? = nil) -> Router {
        var router = Router(authenticator: { keys[$0] }, observer: observer)
        router.add("GET", "/hello") { _, _ in .text(200, "hello") }
        router.add("GET", "/echo/{name}") { request, parameters in
            .text(200, "\(parameters["name"] ?? "?")|\(request.query["asOf"] ?? "-")|\(request.query["x"] ?? "-")")
        }
        router.add("POST", "/upload") { request, _ in
            .text(200, "\(request.body.count):\(request.body.reduce(0) { $0 &+ Int($1) })")
        }
        router.add("GET", "/v1/users/{userId}", scope: "read") { _, parameters in
            .json(200, Array("{\"userId\":\"\(parameters["userId"]!)\"}".utf8))
        }
        router.add("DELETE", "/v1/users/{userId}", scope: "write") { _, _ in HTTPResponse(status: 204) }
        return router
    }

    /// A started server on a free port; the caller stops it.
    static func server(
        router: Router = router(), _ configure: (inout HTTPServer.Configuration) -> Void = { _ in }
    ) throws -> (server: HTTPServer, port: Int) {
        var configuration = HTTPServer.Configuration()
        configuration.threadCount = 2
        configure(&configuration)
        let server = HTTPServer(configuration: configuration, handler: router.handle)
        let port = try server.start()
        return (server, port)
    }

    static func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    }

    static func checksum(_ bytes: [UInt8]) -> String {
        "\(bytes.count):\(bytes.reduce(0) { $0 &+ Int($1) })"
    }
}
