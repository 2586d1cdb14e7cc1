import Foundation
import HTTP
import JSON
import Synchronization
import TestSupport
import Testing

@Suite struct HTTPServerTests {
    @Test func pathParametersAndQueryValuesArriveDecoded() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        let response = try client.request("GET", "/echo/a%2Fb%20c?asOf=2026-12-29T10%3A00%3A00.000Z&x=1+2")
        #expect(response.status == 200)
        #expect(response.text == "a/b c|2026-12-29T10:00:00.000Z|1 2")
        #expect(response.headers["content-type"] == "text/plain; charset=utf-8")
        #expect(response.headers["content-length"] == String(response.body.count))
    }

    @Test func twoRequestsOnOneKeepAliveConnectionAreBothAnswered() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        let first = try client.request("GET", "/hello")
        let second = try client.request("GET", "/echo/again")
        #expect(first.status == 200 && first.text == "hello")
        #expect(first.headers["connection"]?.lowercased() != "close")
        #expect(second.status == 200 && second.text == "again|-|-")
    }

    @Test func requestIdIsEchoedOrGenerated() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        let echoed = try client.request("GET", "/hello", headers: ["X-Request-Id": "abc-123"])
        let first = try client.request("GET", "/hello")
        let second = try client.request("GET", "/hello")
        #expect(echoed.headers["x-request-id"] == "abc-123")
        let a = try #require(first.headers["x-request-id"])
        let b = try #require(second.headers["x-request-id"])
        #expect(a != b && !a.isEmpty)
    }

    @Test(arguments: [0, 17, 1 << 20])
    func postBodiesArriveWhole(size: Int) throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let body = TestRoutes.bytes(size)
        let response = try HTTPTestConnection(port: port).request("POST", "/upload", body: body)
        #expect(response.status == 200)
        #expect(response.text == TestRoutes.checksum(body))
    }

    @Test func chunkedBodiesArriveWhole() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let body = TestRoutes.bytes(300_000)
        let client = try HTTPTestConnection(port: port)
        let response = try client.chunkedRequest("POST", "/upload", body: body, chunkSize: 7_000)
        #expect(response.status == 200)
        #expect(response.text == TestRoutes.checksum(body))
        #expect(try client.request("GET", "/hello").status == 200)
    }

    @Test func declaredOversizeBodyGets413BeforeItIsSent() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        try client.send(
            "POST /upload HTTP/1.1\r\nHost: x\r\nX-Request-Id: big-upload-1\r\nContent-Length: \((1 << 20) + 1)\r\n\r\n"
        )
        let response = try client.readResponse()
        try expectProblem(response, status: 413, code: "payload_too_large")
        // Refused before any handler runs, yet traceable like every other problem.
        #expect(response.headers["x-request-id"] == "big-upload-1")
        #expect(try JSONValue.parse(response.body)["requestId"]?.stringValue == "big-upload-1")
        #expect(try HTTPTestConnection(port: port).request("GET", "/hello").status == 200)
        try eventually("server.inFlightRequests == 0", within: 10) { server.inFlightRequests == 0 }
    }

    @Test func oversizeChunkedBodyGets413AndTheServerStaysHealthy() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        let response = try client.chunkedRequest(
            "POST", "/upload", body: TestRoutes.bytes(1_500_000), chunkSize: 65_536)
        try expectProblem(response, status: 413, code: "payload_too_large")
        let requestId = try JSONValue.parse(response.body)["requestId"]?.stringValue
        #expect(requestId != nil && requestId == response.headers["x-request-id"])
        #expect(try HTTPTestConnection(port: port).request("GET", "/hello").status == 200)
        try eventually("server.inFlightRequests == 0", within: 10) { server.inFlightRequests == 0 }
    }

    @Test func unknownPathAndWrongMethodAreProblems() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        try expectProblem(try client.request("GET", "/nope"), status: 404, code: "not_found")
        let wrong = try client.request("PUT", "/hello", body: [])
        try expectProblem(wrong, status: 405, code: "method_not_allowed")
        #expect(wrong.headers["allow"] == "GET")
    }

    @Test func bearerKeysAreCheckedAgainstTheRouteScope() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        let missing = try client.request("GET", "/v1/users/u-1")
        try expectProblem(missing, status: 401, code: "unauthorized")
        #expect(missing.headers["www-authenticate"] == "Bearer")
        try expectProblem(
            try client.request("GET", "/v1/users/u-1", headers: ["Authorization": "Bearer nobody"]),
            status: 401, code: "unauthorized")
        try expectProblem(
            try client.request("GET", "/v1/users/u-1", headers: ["Authorization": "Bearer writer-key"]),
            status: 403, code: "forbidden")
        let ok = try client.request("GET", "/v1/users/u-1", headers: ["Authorization": "Bearer reader-key"])
        #expect(ok.status == 200)
        #expect(ok.headers["content-type"] == "application/json")
        #expect(ok.text == #"{"userId":"u-1"}"#)
    }

    @Test func manyConcurrentClientsAreAllAnswered() throws {
        let (server, port) = try TestRoutes.server { $0.threadCount = 4 }
        defer { server.stop() }
        let answered = Atomic<Int>(0)
        let group = DispatchGroup()
        for t in 0..<32 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let client = try? HTTPTestConnection(port: port) else { return }
                for i in 0..<50 {
                    if let r = try? client.request("GET", "/echo/t\(t)-\(i)"), r.status == 200,
                        r.text == "t\(t)-\(i)|-|-"
                    {
                        answered.wrappingAdd(1, ordering: .relaxed)
                    }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(answered.load(ordering: .relaxed) == 32 * 50)
    }

    @Test func startOnAPortInUseFailsWithATypedError() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        var configuration = HTTPServer.Configuration()
        configuration.port = port
        let second = HTTPServer(configuration: configuration) { _ in HTTPResponse(status: 200) }
        #expect(throws: HTTPServerError.self) { try second.start() }
        do {
            try second.start()
        } catch {
            #expect(error.code == .portInUse)
            #expect(error.description == "port \(port) is already in use")
        }
    }

    @Test func stopLetsASlowHandlerFinishThenRefusesConnections() throws {
        let entered = DispatchSemaphore(value: 0)
        // The handler runs until the test has seen the stop begin (not for a guessed duration).
        let finish = Gate()
        defer { finish.open() }
        var router = Router()
        router.add("GET", "/slow") { _, _ in
            entered.signal()
            finish.wait(within: 30)
            return .text(200, "done")
        }
        let (server, port) = try TestRoutes.server(router: router)
        let client = try HTTPTestConnection(port: port)
        try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(entered.wait(timeout: .now() + 5) == .success)
        let stopped = Gate()
        Thread {
            server.stop()
            stopped.open()
        }.start()
        // The stop has begun (new connections are refused) and waits for the handler in hand.
        try eventually("new connections refused once the stop began", within: 30, every: 0.01) {
            (try? HTTPTestConnection(port: port)) == nil
        }
        #expect(!stopped.isOpen, "stop returned while a handler was running")
        finish.open()
        #expect(stopped.wait(within: 30), "stop did not return once the handler finished")
        let response = try client.readResponse()
        #expect(response.status == 200 && response.text == "done")
        #expect(response.headers["connection"]?.lowercased() == "close")
        #expect(throws: HTTPTestConnection.Failure.self) { try HTTPTestConnection(port: port) }
        #expect(server.port == nil)
    }

    /// libmicrohttpd 0.9.75 in epoll mode with a thread pool aborts the process ("Failed to
    /// remove listen FD from epoll set") when a worker, woken by a connection, takes the listen
    /// socket out of its epoll set while `MHD_quiesce_daemon` does the same: `stop()` under a
    /// storm of new connections hit it in CI. Each round here stops a server mid-storm.
    @Test func stoppingWhileClientsKeepConnectingNeverAborts() throws {
        // ~1 in 900 rounds aborted in epoll mode here; 200 rounds take ~3 s.
        for _ in 0..<200 {
            let (server, port) = try TestRoutes.server { $0.threadCount = 8 }
            let storming = Atomic<Bool>(true)
            let answered = Atomic<Int>(0)
            let group = DispatchGroup()
            for _ in 0..<4 {
                group.enter()
                Thread {
                    defer { group.leave() }
                    while storming.load(ordering: .relaxed) {
                        if let r = try? HTTPTestConnection(port: port).request("GET", "/hello"), r.status == 200 {
                            answered.wrappingAdd(1, ordering: .relaxed)
                        }
                    }
                }.start()
            }
            try eventually("20 answers in the storm", within: 60, every: 0.001) {
                answered.load(ordering: .relaxed) >= 20
            }
            server.stop()
            storming.store(false, ordering: .relaxed)
            #expect(group.wait(timeout: .now() + 30) == .success)
            #expect(throws: HTTPTestConnection.Failure.self) { try HTTPTestConnection(port: port) }
        }
    }

    @Test func idleConnectionsAreClosedAfterTheTimeout() throws {
        let (server, port) = try TestRoutes.server { $0.connectionTimeoutSeconds = 1 }
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        #expect(try client.request("GET", "/hello").status == 200)
        let started = Date()
        #expect(client.isClosedByPeer())
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func aRequestHeadLargerThanTheLimitIsRefusedWithoutReachingTheHandler() throws {
        let reached = Atomic<Int>(0)
        var router = Router()
        router.add("GET", "/hello") { _, _ in
            reached.wrappingAdd(1, ordering: .relaxed)
            return .text(200, "hello")
        }
        let (server, port) = try TestRoutes.server(router: router) { $0.maxHeaderBytes = 8 * 1024 }
        defer { server.stop() }
        let big = String(repeating: "a", count: 16 * 1024)
        let response = try HTTPTestConnection(port: port).request("GET", "/hello", headers: ["X-Big": big])
        #expect(response.status == 431)
        #expect(reached.load(ordering: .relaxed) == 0)
        #expect(try HTTPTestConnection(port: port).request("GET", "/hello").status == 200)
        try eventually("server.inFlightRequests == 0", within: 10) { server.inFlightRequests == 0 }
    }

    @Test func headAnswersWithHeadersOnly() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        try client.send("HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try client.readResponseHead()
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == "5")
        #expect(try client.request("GET", "/hello").text == "hello")
    }

    private func expectProblem(_ response: HTTPTestConnection.Response, status: Int, code: String) throws {
        #expect(response.status == status)
        #expect(response.headers["content-type"] == "application/problem+json")
        let json = try JSONValue.parse(response.body)
        #expect(json["code"]?.stringValue == code)
        #expect(json["status"]?.int64Value == Int64(status))
        #expect(json["type"]?.stringValue == HTTPResponse.problemTypeBase + code)
        #expect(json["title"]?.stringValue != nil && json["detail"]?.stringValue != nil)
    }
}
