import Foundation
import HTTP
import JSON
import Synchronization
import TestSupport
import Testing

/// Deferred responses (long polls) through a real server and real sockets: the handler returns
/// `.deferred(handle)`, the connection is suspended, and `complete` answers it later.
@Suite struct DeferredResponseTests {
    /// The handles the `/wait/{name}` route handed out, by name, for the test to complete.
    final class Waiters: Sendable {
        private let handles = Mutex<[String: HTTPDeferred]>([:])

        func add(_ name: String, _ deferred: HTTPDeferred) {
            handles.withLock { $0[name] = deferred }
        }

        func take(_ name: String) -> HTTPDeferred? {
            handles.withLock { $0.removeValue(forKey: name) }
        }

        var count: Int { handles.withLock { $0.count } }
    }

    /// `/wait/{name}` defers (60 s, or `?timeoutMs=`); `/now` completes before it returns;
    /// `/hello` answers at once.
    static func server(
        _ waiters: Waiters, _ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
        observer: Router.Observer? = nil
    ) throws -> (server: HTTPServer, port: Int) {
        var router = Router(observer: observer)
        router.add("GET", "/hello") { _, _ in .text(200, "hello") }
        router.add("GET", "/wait/{name}") { request, parameters in
            let timeout = request.query["timeoutMs"].flatMap(Int.init).map { Duration.milliseconds($0) } ?? .seconds(60)
            let deferred = HTTPDeferred(timeout: timeout, timeoutResponse: .json(200, Array(#"{"changes":[]}"#.utf8)))
            waiters.add(parameters["name"]!, deferred)
            return .deferred(deferred)
        }
        router.add("GET", "/now") { _, _ in
            // The race "completed before the server suspended" made deterministic.
            let deferred = HTTPDeferred(timeout: .seconds(60), timeoutResponse: .text(500, "timeout"))
            deferred.complete(.text(200, "early"))
            waiters.add("now", deferred)
            return .deferred(deferred)
        }
        router.add("GET", "/race/{name}") { _, parameters in
            // Completed from another thread while the handler returns: sometimes before the
            // server suspends, sometimes after; either way the one answer must arrive.
            let name = parameters["name"]!
            let deferred = HTTPDeferred(timeout: .seconds(60), timeoutResponse: .text(500, "timeout"))
            DispatchQueue.global().async { deferred.complete(.text(200, name)) }
            return .deferred(deferred)
        }
        return try TestRoutes.server(router: router, configure)
    }

    @Test func aResponseCompletedFromAnotherThreadArrivesWithItsStatusBodyAndHeaders() throws {
        let waiters = Waiters()
        let (server, port) = try Self.server(waiters)
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        try client.send("GET /wait/a HTTP/1.1\r\nHost: x\r\nX-Request-Id: poll-1\r\n\r\n")
        try eventually("server.deferredRequests == 1", within: 10) { server.deferredRequests == 1 }
        let deferred = try #require(waiters.take("a"))
        let completed = Mutex(false)
        onThreads(1) { _ in
            var response = HTTPResponse.json(201, Array(#"{"changes":[1]}"#.utf8))
            response.headers["X-Cursor"] = "c-7"
            let won = deferred.complete(response)
            completed.withLock { $0 = won }
        }
        let response = try client.readResponse()
        #expect(completed.withLock { $0 })
        #expect(response.status == 201)
        #expect(response.text == #"{"changes":[1]}"#)
        #expect(response.headers["content-type"] == "application/json")
        #expect(response.headers["x-cursor"] == "c-7")
        #expect(response.headers["x-request-id"] == "poll-1")
        #expect(!deferred.complete(.text(500, "again")))
        // The same keep-alive connection goes on serving.
        #expect(try client.request("GET", "/hello").text == "hello")
        try eventually("server.inFlightRequests == 0 && server.deferredRequests == 0", within: 10) {
            server.inFlightRequests == 0 && server.deferredRequests == 0
        }
    }

    @Test func aThousandWaitersOnTwoWorkerThreadsAreAllAnsweredAndOthersServedMeanwhile() throws {
        OpenFileLimit.raiseToHard()  // 1,000 client and 1,000 server sockets in this process
        let waiters = Waiters()
        let (server, port) = try Self.server(waiters) { $0.threadCount = 2 }
        defer { server.stop() }
        let count = 1_000
        var clients: [HTTPTestConnection] = []
        for i in 0..<count {
            let client = try HTTPTestConnection(port: port)
            try client.send("GET /wait/w\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            clients.append(client)
        }
        // All suspended at once with two workers: no thread is held per waiter.
        try eventually("server.deferredRequests == count", within: 60) { server.deferredRequests == count }
        for _ in 0..<20 {
            #expect(try HTTPTestConnection(port: port).request("GET", "/hello").text == "hello")
        }
        let handles = (0..<count).compactMap { waiters.take("w\($0)") }
        #expect(handles.count == count)
        onThreads(4) { part in
            for i in stride(from: part, to: handles.count, by: 4) { handles[i].complete(.text(200, "w\(i)")) }
        }
        var answered = 0
        for (i, client) in clients.enumerated() {
            let response = try client.readResponse()
            if response.status == 200 && response.text == "w\(i)" { answered += 1 }
        }
        #expect(answered == count)
        try eventually("server.deferredRequests == 0", within: 10) { server.deferredRequests == 0 }
    }

    @Test func aHandleCompletedBeforeTheServerSuspendsIsAnsweredAtOnce() throws {
        let waiters = Waiters()
        let (server, port) = try Self.server(waiters)
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        let response = try client.request("GET", "/now", headers: ["X-Request-Id": "early-1"])
        #expect(response.status == 200 && response.text == "early")
        #expect(response.headers["x-request-id"] == "early-1")
        #expect(server.deferredRequests == 0)
        #expect(try #require(waiters.take("now")).isCompleted)
        #expect(try client.request("GET", "/hello").text == "hello")
    }

    @Test func completionsRacingTheSuspendAreEachAnsweredOnce() throws {
        let (server, port) = try Self.server(Waiters())
        defer { server.stop() }
        let answered = Mutex(0)
        onThreads(8) { t in
            guard let client = try? HTTPTestConnection(port: port) else { return }
            for i in 0..<50 {
                if let response = try? client.request("GET", "/race/r\(t)-\(i)"), response.status == 200,
                    response.text == "r\(t)-\(i)"
                {
                    answered.withLock { $0 += 1 }
                }
            }
        }
        #expect(answered.withLock { $0 } == 8 * 50)
        try eventually("server.inFlightRequests == 0 && server.deferredRequests == 0", within: 10) {
            server.inFlightRequests == 0 && server.deferredRequests == 0
        }
    }

    @Test func aClientThatHangsUpWhileWaitingLeavesTheServerHealthy() throws {
        let waiters = Waiters()
        let (server, port) = try Self.server(waiters)
        defer { server.stop() }
        do {
            let client = try HTTPTestConnection(port: port)
            try client.send("GET /wait/gone HTTP/1.1\r\nHost: x\r\n\r\n")
            try eventually("server.deferredRequests == 1", within: 10) { server.deferredRequests == 1 }
        }  // closed here, while suspended: MHD does not notice until the resume
        let deferred = try #require(waiters.take("gone"))
        #expect(deferred.complete(.text(200, "too late")))
        try eventually("server.inFlightRequests == 0 && server.deferredRequests == 0", within: 10) {
            server.inFlightRequests == 0 && server.deferredRequests == 0
        }
        #expect(try HTTPTestConnection(port: port).request("GET", "/hello").text == "hello")
    }

    @Test func stopAnswersEveryWaiter503AndLaterCompletionsAreRefused() throws {
        let waiters = Waiters()
        let (server, port) = try Self.server(waiters)
        var clients: [HTTPTestConnection] = []
        for i in 0..<3 {
            let client = try HTTPTestConnection(port: port)
            try client.send("GET /wait/s\(i) HTTP/1.1\r\nHost: x\r\nX-Request-Id: stop-\(i)\r\n\r\n")
            clients.append(client)
        }
        try eventually("server.deferredRequests == 3", within: 10) { server.deferredRequests == 3 }
        server.stop()  // returns only once every connection is answered or closed
        for (i, client) in clients.enumerated() {
            let response = try client.readResponse()
            #expect(response.status == 503)
            #expect(response.json["code"]?.stringValue == "shutting_down")
            #expect(response.headers["x-request-id"] == "stop-\(i)")
            #expect(response.headers["connection"]?.lowercased() == "close")
        }
        #expect(server.inFlightRequests == 0 && server.deferredRequests == 0)
        for i in 0..<3 {
            #expect(try #require(waiters.take("s\(i)")).complete(.text(200, "late")) == false)
        }
    }

    @Test func aWaiterNobodyCompletesGetsItsTimeoutResponse() throws {
        let waiters = Waiters()
        let (server, port) = try Self.server(waiters)
        defer { server.stop() }
        let response = try HTTPTestConnection(port: port).request("GET", "/wait/t?timeoutMs=50")
        #expect(response.status == 200 && response.text == #"{"changes":[]}"#)
        #expect(try #require(waiters.take("t")).isCompleted)
    }

    @Test func theServerCapsAHandlersTimeoutAtMaxDeferredSeconds() throws {
        let waiters = Waiters()
        let (server, port) = try Self.server(waiters) { $0.maxDeferredSeconds = 0.05 }
        defer { server.stop() }
        let response = try HTTPTestConnection(port: port).request("GET", "/wait/cap?timeoutMs=3600000")
        #expect(response.status == 200 && response.text == #"{"changes":[]}"#)
    }

    @Test func theRouterObservesTheFinalStatusNotThePlaceholder() throws {
        let waiters = Waiters()
        let seen = Mutex<[(String, Int)]>([])
        let (server, port) = try Self.server(
            waiters,
            observer: { _, route, status, _ in
                seen.withLock { $0.append((route, status)) }
            })
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        try client.send("GET /wait/o HTTP/1.1\r\nHost: x\r\n\r\n")
        try eventually("server.deferredRequests == 1", within: 10) { server.deferredRequests == 1 }
        #expect(seen.withLock { $0.isEmpty })
        try #require(waiters.take("o")).complete(.text(202, "done"))
        #expect(try client.readResponse().status == 202)
        let observed = seen.withLock { $0 }
        #expect(observed.count == 1 && observed.first?.0 == "/wait/{name}" && observed.first?.1 == 202)
    }
}
