import Foundation
import HTTP
import JSON
import TestSupport
import Testing

/// A client that is still sending when the server refuses its request (413 body too large, 431
/// head too large) must be able to read the refusal. Closing a socket with unread input makes
/// the kernel send a reset, which destroys the answer in flight; so the server keeps reading
/// and discarding for a bounded time after it answers (nginx's lingering close).
@Suite struct LingeringCloseTests {
    /// The client writes the whole 2 MB body, 64 KiB at a time, before reading anything: the
    /// 413 is answered after the first headers, long before the upload ends.
    @Test func aClientStillSendingAnOversizeBodyReadsThe413() throws {
        let (server, port) = try TestRoutes.server()
        defer { server.stop() }
        for attempt in 0..<3 {
            let client = try HTTPTestConnection(port: port)
            let size = 2 << 20
            try client.send(
                "POST /upload HTTP/1.1\r\nHost: x\r\nX-Request-Id: linger-\(attempt)\r\nContent-Length: \(size)\r\n\r\n"
            )
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 * 1024)
            for _ in 0..<(size / chunk.count) { try client.send(chunk) }
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.headers["content-type"] == "application/problem+json")
            let problem = try JSONValue.parse(response.body)
            #expect(problem["code"]?.stringValue == "payload_too_large")
            #expect(problem["requestId"]?.stringValue == "linger-\(attempt)")
            // The refused connection is then closed cleanly (FIN, not a reset).
            #expect(client.isClosedByPeer())
        }
        #expect(try HTTPTestConnection(port: port).request("GET", "/hello").status == 200)
    }

    /// The same for a request head past `maxHeaderBytes`: MHD answers 431 after reading the
    /// first 8 KiB, while the client is still writing the other 2 MB.
    @Test func aClientStillSendingAnOversizeHeadReadsThe431() throws {
        let (server, port) = try TestRoutes.server { $0.maxHeaderBytes = 8 * 1024 }
        defer { server.stop() }
        for _ in 0..<3 {
            let client = try HTTPTestConnection(port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n")
            let line = "X-Filler: " + String(repeating: "b", count: 1000) + "\r\n"
            for _ in 0..<2048 { try client.send(line) }
            try client.send("\r\n")
            let response = try client.readResponse()
            #expect(response.status == 431)
            #expect(client.isClosedByPeer())
        }
        #expect(try HTTPTestConnection(port: port).request("GET", "/hello").status == 200)
    }

    /// Lingering is bounded: a client that keeps sending past `lingeringCloseBytes` is cut off.
    @Test func lingeringStopsAfterItsByteBudget() throws {
        let (server, port) = try TestRoutes.server { $0.lingeringCloseBytes = 256 * 1024 }
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: \(64 << 20)\r\n\r\n")
        let chunk = [UInt8](repeating: UInt8(ascii: "c"), count: 64 * 1024)
        var sent = 0
        var failed = false
        while sent < 64 << 20 {
            do { try client.send(chunk) } catch {
                failed = true
                break
            }
            sent += chunk.count
        }
        #expect(failed, "the server read all of an endless upload")
        #expect(sent < 32 << 20, "sent \(sent) bytes before the server gave up")
    }

    /// An oversize chunked body is read and thrown away so that its 413 can be answered at the
    /// end, but only within the same budget: an endless chunked upload is cut off.
    @Test func anEndlessChunkedUploadIsCutOff() throws {
        let (server, port) = try TestRoutes.server { $0.lingeringCloseBytes = 256 * 1024 }
        defer { server.stop() }
        let client = try HTTPTestConnection(port: port)
        try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk =
            Array(String(65_536, radix: 16).utf8) + [13, 10] + [UInt8](repeating: 0x64, count: 65_536) + [13, 10]
        var sent = 0
        var failed = false
        while sent < 64 << 20 {
            do { try client.send(chunk) } catch {
                failed = true
                break
            }
            sent += 65_536
        }
        #expect(failed, "the server read all of an endless chunked upload")
        #expect(sent < 32 << 20, "sent \(sent) bytes before the server gave up")
        #expect(try HTTPTestConnection(port: port).request("GET", "/hello").status == 200)
    }
}
