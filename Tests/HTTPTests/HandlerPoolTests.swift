import Foundation
import HTTP
import Synchronization
import TestSupport
import Testing

/// Routes on a `HandlerPool` run off MHD's workers: a blocked handler holds a pool thread, not a
/// worker, and `stop()` lets it finish where it answers a long poll at once.
@Suite struct HandlerPoolTests {
    /// One MHD worker; `/block/{name}` blocks its pool thread until the test opens its gate.
    final class Gates: Sendable {
        private let gates = Mutex<[String: DispatchSemaphore]>([:])
        let entered = Atomic<Int>(0)

        /// Lets every handler go (before `HandlerPool.stop`, which waits for them).
        func openAll(_ names: [String]) {
            for name in names { gate(name).signal() }
        }

        func gate(_ name: String) -> DispatchSemaphore {
            gates.withLock { gates in
                if let gate = gates[name] { return gate }
                let gate = DispatchSemaphore(value: 0)
                gates[name] = gate
                return gate
            }
        }
    }

    static func server(_ gates: Gates, pool: HandlerPool, grace: Double = 10) throws -> (server: HTTPServer, port: Int)
    {
        var router = Router(authenticator: { $0 == "k" ? ["read"] : nil })
        router.pool = pool
        router.add("GET", "/block/{name}") { _, parameters in
            gates.entered.add(1, ordering: .relaxed)
            gates.gate(parameters["name"]!).wait()
            return .text(200, "done \(parameters["name"]!)")
        }
        router.add("GET", "/inline", inline: true) { _, _ in .text(200, "inline") }
        router.add("GET", "/secret", scope: "read") { _, _ in .text(200, "secret") }
        router.add("GET", "/poll", inline: true) { _, _ in
            .deferred(HTTPDeferred(timeout: .seconds(60), timeoutResponse: .text(200, "timed out")))
        }
        return try TestRoutes.server(router: router) {
            $0.threadCount = 1
            $0.shutdownGraceSeconds = grace
        }
    }

    @Test func aBlockedHandlerHoldsAPoolThreadNotTheWorker() throws {
        let gates = Gates()
        let pool = HandlerPool(threads: 4)
        defer {
            gates.openAll(["b0", "b1", "b2"])
            pool.stop()
        }
        let (server, port) = try Self.server(gates, pool: pool)
        defer { server.stop() }
        let blocked = try (0..<3).map { index in
            let client = try HTTPTestConnection(port: port)
            try client.send("GET /block/b\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            return client
        }
        try eventually("gates.entered.load(ordering: .relaxed) == 3", within: 10) {
            gates.entered.load(ordering: .relaxed) == 3
        }
        // The only worker still answers: inline routes, and pooled ones on a free thread.
        #expect(try HTTPTestConnection(port: port).request("GET", "/inline").text == "inline")
        let secret = try HTTPTestConnection(port: port).request(
            "GET", "/secret", headers: ["Authorization": "Bearer k"])
        #expect(secret.status == 200 && secret.text == "secret")
        #expect(
            try HTTPTestConnection(port: port).request("GET", "/secret").status == 401,
            "keys are checked on the pool too")
        for (index, client) in blocked.enumerated() {
            gates.gate("b\(index)").signal()
            let response = try client.readResponse()
            #expect(response.status == 200 && response.text == "done b\(index)")
        }
        try eventually("pool.pending == 0", within: 10) { pool.pending == 0 }
    }

    @Test func stopLetsARunningHandlerFinishAndAnswersALongPollAtOnce() throws {
        let gates = Gates()
        let pool = HandlerPool(threads: 2)
        defer {
            gates.openAll(["w"])
            pool.stop()
        }
        let (server, port) = try Self.server(gates, pool: pool)
        let working = try HTTPTestConnection(port: port)
        try working.send("GET /block/w HTTP/1.1\r\nHost: x\r\n\r\n")
        let polling = try HTTPTestConnection(port: port)
        try polling.send("GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
        try eventually("gates.entered.load(ordering: .relaxed) == 1 && server.deferredRequests == 2", within: 10) {
            gates.entered.load(ordering: .relaxed) == 1 && server.deferredRequests == 2
        }
        let stopped = DispatchSemaphore(value: 0)
        let stopping = Thread {
            server.stop()
            stopped.signal()
        }
        stopping.start()
        let poll = try polling.readResponse()
        #expect(poll.status == 503, "a long poll is answered when the stop begins")
        #expect(stopped.wait(timeout: .now() + 0.2) == .timedOut, "the stop waits for the running handler")
        gates.gate("w").signal()
        let response = try working.readResponse()
        #expect(response.status == 200 && response.text == "done w")
        #expect(stopped.wait(timeout: .now() + 5) == .success)
    }

    @Test func aHandlerStillRunningAfterTheGraceIsAnswered503AndTheServerStops() throws {
        let gates = Gates()
        let pool = HandlerPool(threads: 2)
        let (server, port) = try Self.server(gates, pool: pool, grace: 0.3)
        let working = try HTTPTestConnection(port: port)
        try working.send("GET /block/late HTTP/1.1\r\nHost: x\r\n\r\n")
        try eventually("gates.entered.load(ordering: .relaxed) == 1", within: 10) {
            gates.entered.load(ordering: .relaxed) == 1
        }
        server.stop()
        let response = try working.readResponse()
        #expect(response.status == 503)
        // The handler ends later; its answer is dropped, nothing touches the stopped server.
        gates.gate("late").signal()
        pool.stop()
        #expect(pool.pending == 0)
        pool.stop()  // idempotent: a second stop (a service stopped twice) returns too
    }
}
