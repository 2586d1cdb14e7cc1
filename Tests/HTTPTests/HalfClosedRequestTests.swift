import Foundation
import HTTP
import Synchronization
import TestSupport
import Testing

/// A client that shuts its writing side once the request is sent (`shutdown(SHUT_WR)`, as
/// `nc -N`, some proxies and HTTP/1.0 clients do) has still sent a whole request: it is
/// answered, then the connection closes. Routes on the worker, on a `HandlerPool` (whose
/// connection is suspended while the handler runs) and long polls; bodies read at once and
/// bodies spanning many reads.
@Suite struct HalfClosedRequestTests {
    /// Handlers on the pool that wait for the test: the answer is then produced after the
    /// server has the client's end-of-file in its socket, whatever the scheduling.
    final class Gates: Sendable {
        private let gates = Mutex<[String: DispatchSemaphore]>([:])
        let entered = Atomic<Int>(0)

        func gate(_ name: String) -> DispatchSemaphore {
            gates.withLock { gates in
                if let gate = gates[name] { return gate }
                let gate = DispatchSemaphore(value: 0)
                gates[name] = gate
                return gate
            }
        }
    }

    /// Long polls the test completes (`/poll/{name}`).
    final class Waiters: Sendable {
        private let handles = Mutex<[String: HTTPDeferred]>([:])

        func add(_ name: String, _ deferred: HTTPDeferred) { handles.withLock { $0[name] = deferred } }
        func take(_ name: String) -> HTTPDeferred? { handles.withLock { $0.removeValue(forKey: name) } }
    }

    static func server(_ gates: Gates, _ waiters: Waiters, pool: HandlerPool) throws -> (server: HTTPServer, port: Int)
    {
        var router = Router(authenticator: { _ in nil })
        router.pool = pool
        router.add("POST", "/inline", inline: true) { request, _ in .text(200, TestRoutes.checksum(request.body)) }
        router.add("GET", "/inline", inline: true) { _, _ in .text(200, "inline") }
        router.add("POST", "/pool") { request, _ in .text(200, TestRoutes.checksum(request.body)) }
        router.add("GET", "/pool") { _, _ in .text(200, "pool") }
        router.add("POST", "/gated/{name}") { request, parameters in
            gates.entered.add(1, ordering: .relaxed)
            gates.gate(parameters["name"]!).wait()
            return .text(200, TestRoutes.checksum(request.body))
        }
        router.add("POST", "/poll/{name}", inline: true) { _, parameters in
            let deferred = HTTPDeferred(timeout: .seconds(60), timeoutResponse: .text(200, "timed out"))
            waiters.add(parameters["name"]!, deferred)
            return .deferred(deferred)
        }
        // One worker with a small connection memory: a 300 kB body takes dozens of reads.
        return try TestRoutes.server(router: router) {
            $0.threadCount = 1
            $0.maxHeaderBytes = 8 * 1024
        }
    }

    /// Sends `method target` with a `Content-Length` body, shuts the writing side, and reads
    /// the one answer and then end-of-file.
    private func halfClosedExchange(
        _ port: Int, _ method: String, _ target: String, body: [UInt8]?,
        beforeAnswer: () throws -> Void = {}
    ) throws -> HTTPTestConnection.Response {
        let client = try HTTPTestConnection(port: port, receiveTimeout: 20)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let body { head += "Content-Length: \(body.count)\r\n" }
        try client.send(Array((head + "\r\n").utf8) + (body ?? []))
        try client.shutdownWrite()
        try beforeAnswer()
        let response = try client.readResponse()
        let after = try client.readUntilClosed()
        #expect(after.isEmpty, "nothing after the one answer, then end-of-file")
        return response
    }

    @Test(arguments: [0, 17, 300_000])
    func aPostAnsweredOnTheWorkerIsAnswered(size: Int) throws {
        let pool = HandlerPool(threads: 2)
        defer { pool.stop() }
        let (server, port) = try Self.server(Gates(), Waiters(), pool: pool)
        defer { server.stop() }
        let body = TestRoutes.bytes(size)
        let response = try halfClosedExchange(port, "POST", "/inline", body: body)
        #expect(response.status == 200)
        #expect(response.text == TestRoutes.checksum(body))
    }

    @Test(arguments: [0, 17, 300_000])
    func aPostAnsweredOnTheHandlerPoolIsAnswered(size: Int) throws {
        let pool = HandlerPool(threads: 2)
        defer { pool.stop() }
        let (server, port) = try Self.server(Gates(), Waiters(), pool: pool)
        defer { server.stop() }
        let body = TestRoutes.bytes(size)
        let response = try halfClosedExchange(port, "POST", "/pool", body: body)
        #expect(response.status == 200)
        #expect(response.text == TestRoutes.checksum(body))
    }

    /// The handler answers only once the client's end-of-file is already in the server's
    /// socket (loopback queues the FIN when `shutdown` returns), so the suspended connection is
    /// resumed with it waiting: the case that was closed without an answer.
    @Test(arguments: [17, 300_000])
    func aPostWhoseHandlerFinishesAfterTheHalfCloseIsAnswered(size: Int) throws {
        let gates = Gates()
        let pool = HandlerPool(threads: 2)
        defer {
            gates.gate("g\(size)").signal()
            pool.stop()
        }
        let (server, port) = try Self.server(gates, Waiters(), pool: pool)
        defer { server.stop() }
        let body = TestRoutes.bytes(size)
        let response = try halfClosedExchange(port, "POST", "/gated/g\(size)", body: body) {
            try eventually("gates.entered.load(ordering: .relaxed) == 1", within: 10) {
                gates.entered.load(ordering: .relaxed) == 1
            }
            gates.gate("g\(size)").signal()
        }
        #expect(response.status == 200)
        #expect(response.text == TestRoutes.checksum(body))
    }

    @Test func aLongPollCompletedAfterTheHalfCloseIsAnswered() throws {
        let waiters = Waiters()
        let pool = HandlerPool(threads: 2)
        defer { pool.stop() }
        let (server, port) = try Self.server(Gates(), waiters, pool: pool)
        defer { server.stop() }
        let response = try halfClosedExchange(port, "POST", "/poll/w", body: Array("{}".utf8)) {
            var handle: HTTPDeferred?
            try eventually("the deferred request's handle", within: 10) {
                handle = waiters.take("w")
                return handle != nil
            }
            try eventually("server.deferredRequests == 1", within: 10) { server.deferredRequests == 1 }
            handle?.complete(.text(200, "completed"))
        }
        #expect(response.status == 200)
        #expect(response.text == "completed")
    }

    @Test(arguments: ["/inline", "/pool"])
    func aGetIsAnswered(target: String) throws {
        let pool = HandlerPool(threads: 2)
        defer { pool.stop() }
        let (server, port) = try Self.server(Gates(), Waiters(), pool: pool)
        defer { server.stop() }
        let response = try halfClosedExchange(port, "GET", target, body: nil)
        #expect(response.status == 200)
        #expect(response.text == String(target.dropFirst()))
    }

    /// Half-closed before the body is complete: that is no request, and the server only closes.
    @Test func aRequestCutShortByTheHalfCloseIsNotAnswered() throws {
        let pool = HandlerPool(threads: 2)
        defer { pool.stop() }
        let (server, port) = try Self.server(Gates(), Waiters(), pool: pool)
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port, receiveTimeout: 20)
        try client.send("POST /pool HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nabc")
        try client.shutdownWrite()
        #expect(try client.readUntilClosed().isEmpty)
        try eventually("server.inFlightRequests == 0", within: 10) { server.inFlightRequests == 0 }
    }
}
