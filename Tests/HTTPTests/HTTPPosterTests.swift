import Foundation
import HTTP
import Synchronization
import Testing

/// HTTPPoster against an in-process HTTPServer: what arrives, what comes back, and how a
/// request ends when the other side is huge, slow, redirecting or not there.
@Suite struct HTTPPosterTests {
    /// What the receiver saw of each POST.
    final class Seen: Sendable {
        let requests = Mutex<[HTTPRequest]>([])
    }

    static func receiver(_ seen: Seen) throws -> (server: HTTPServer, port: Int) {
        var router = Router()
        router.add("POST", "/in") { request, _ in
            seen.requests.withLock { $0.append(request) }
            return HTTPResponse(status: 201)
        }
        router.add("POST", "/huge") { _, _ in HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: 1 << 20))
        }
        // Not answered while a test runs (the server's stop answers it; 30 s bound it), and
        // holding no worker thread meanwhile: a blocked worker would delay other connections too.
        router.add("POST", "/slow") { _, _ in
            .deferred(HTTPDeferred(timeout: .seconds(30), timeoutResponse: HTTPResponse(status: 200)))
        }
        router.add("POST", "/moved") { _, _ in HTTPResponse(status: 302, headers: ["Location": "/in"]) }
        return try TestRoutes.server(router: router) { $0.threadCount = 4 }
    }

    /// Posts and waits (with a deadline, not a sleep) for the one completion.
    static func post(
        _ poster: HTTPPoster, _ url: String, headers: [String] = [], body: [UInt8] = Array("{}".utf8),
        timeout: Double = 5, cap: Int = 64 << 10
    ) throws -> HTTPPoster.Outcome {
        let done = DispatchSemaphore(value: 0)
        let outcomes = Mutex<[HTTPPoster.Outcome]>([])
        poster.post(.init(url: url, headers: headers, body: body, timeoutSeconds: timeout, maxResponseBytes: cap)) {
            outcome in
            outcomes.withLock { $0.append(outcome) }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + timeout + 5) == .success, "no completion")
        let all = outcomes.withLock { $0 }
        #expect(all.count == 1)
        return try #require(all.first)
    }

    @Test func aPostArrivesWithItsHeadersAndBodyAndItsStatusComesBack() throws {
        let seen = Seen()
        let (server, port) = try Self.receiver(seen)
        defer { server.stop() }
        let poster = HTTPPoster(name: "poster-test")
        defer { poster.stop() }
        let body = Array(#"{"id":"chg_000000000000001"}"#.utf8)
        // Several, one after another: every one answered on the same poster.
        for n in 1...5 {
            let outcome = try Self.post(
                poster, "http://127.0.0.1:\(port)/in",
                headers: ["Content-Type: application/json", "webhook-id: n\(n)"], body: body)
            #expect(outcome == .response(status: 201))
        }
        let requests = seen.requests.withLock { $0 }
        #expect(requests.count == 5)
        #expect(requests.map { $0.header("webhook-id") } == ["n1", "n2", "n3", "n4", "n5"])
        #expect(requests.allSatisfy { $0.body == body && $0.header("content-type") == "application/json" })
        #expect(requests.allSatisfy { $0.header("expect") == nil }, "a body must not wait for 100 Continue")
    }

    @Test func aHugeAnswerIsCutAtTheCapAndItsStatusStands() throws {
        let (server, port) = try Self.receiver(Seen())
        defer { server.stop() }
        let poster = HTTPPoster(name: "poster-test")
        defer { poster.stop() }
        #expect(try Self.post(poster, "http://127.0.0.1:\(port)/huge", cap: 1024) == .response(status: 200))
    }

    @Test func aRedirectIsTheAnswerNotFollowed() throws {
        let seen = Seen()
        let (server, port) = try Self.receiver(seen)
        defer { server.stop() }
        let poster = HTTPPoster(name: "poster-test")
        defer { poster.stop() }
        #expect(try Self.post(poster, "http://127.0.0.1:\(port)/moved") == .response(status: 302))
        #expect(seen.requests.withLock { $0.isEmpty })
    }

    @Test func aSlowAnswerEndsAtTheTimeoutWhileAnotherRequestGoesOn() throws {
        let seen = Seen()
        // The slow answer never comes while the test runs: what ends the request is its timeout.
        let (server, port) = try Self.receiver(seen)
        defer { server.stop() }
        let poster = HTTPPoster(name: "poster-test")
        defer { poster.stop() }
        let slow = DispatchSemaphore(value: 0)
        let slowOutcome = Mutex<(HTTPPoster.Outcome, Double)?>(nil)
        let started = Date()
        poster.post(
            .init(
                url: "http://127.0.0.1:\(port)/slow", headers: [], body: [1], timeoutSeconds: 0.5,
                maxResponseBytes: 1024)
        ) {
            outcome in
            slowOutcome.withLock { $0 = (outcome, Date().timeIntervalSince(started)) }
            slow.signal()
        }
        // The poster's one thread is not held by the slow transfer.
        #expect(try Self.post(poster, "http://127.0.0.1:\(port)/in") == .response(status: 201))
        #expect(slow.wait(timeout: .now() + 5) == .success)
        let (outcome, elapsed) = try #require(slowOutcome.withLock { $0 })
        #expect(outcome == .failure(.timedOut))
        #expect(elapsed >= 0.45 && elapsed < 1.9, "ended after \(elapsed) s, the timeout is 0.5 s")
    }

    @Test func aPortNobodyListensOnIsRefused() throws {
        let (server, port) = try Self.receiver(Seen())
        server.stop()
        let poster = HTTPPoster(name: "poster-test")
        defer { poster.stop() }
        #expect(try Self.post(poster, "http://127.0.0.1:\(port)/in") == .failure(.connectionRefused))
    }
}
