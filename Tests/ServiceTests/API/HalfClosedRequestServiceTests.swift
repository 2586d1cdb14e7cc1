import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The service's routes answer a client that shuts its writing side once the request is sent
/// (`nc -N`, some proxies, HTTP/1.0 clients): a POST on the handler pool (its connection
/// suspended while the handler runs), a read the user cache answers, and an inline route.
@Suite(.tags(.database)) final class HalfClosedRequestServiceTests {
    let service: TestService

    init() throws { service = try TestService() }

    deinit { service.stop() }

    /// Sends the request, shuts the writing side, reads the one answer, then end-of-file.
    func halfClosed(_ method: String, _ target: String, scope: String?, body: [UInt8]?) throws
        -> HTTPTestConnection.Response
    {
        let client = try HTTPTestConnection(port: service.app.port, receiveTimeout: 20)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let scope, let key = service.keys[scope] { head += "Authorization: Bearer \(key)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        try client.send(Array((head + "\r\n").utf8) + (body ?? []))
        try client.shutdownWrite()
        let response = try client.readResponse()
        #expect(try client.readUntilClosed().isEmpty, "nothing after the one answer, then end-of-file")
        return response
    }

    @Test func aPurchaseWithABadBodyIsAnswered400() throws {
        // Small, and large enough to arrive in many reads (still under the 1 MiB limit).
        for padding in [0, 200_000] {
            let body = Array(#"{"userId": "u-half", "padding": "\#(String(repeating: "x", count: padding))"}"#.utf8)
            let response = try halfClosed("POST", "/v1/purchases", scope: "write", body: body)
            #expect(response.status == 400, "\(response.text)")
            #expect(response.json["code"]?.stringValue == "invalid_request")
            #expect(response.headers["x-request-id"] == response.json["requestId"]?.stringValue)
        }
    }

    @Test func aPurchaseIsRecordedAndAnswered() throws {
        let signed = TestVectors.shared.signedTransaction([
            "transactionId": "8300001", "originalTransactionId": "8300001",
        ])
        let body = JSONValue.object(["userId": "u-half", "signedTransaction": .string(signed)]).serialized()
        let response = try halfClosed("POST", "/v1/purchases", scope: "write", body: body)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["transactions"]?[0]?["result"]?.stringValue == "recorded")
        // The user read (answered by the cache, or by the pool on a miss) and an inline route.
        let user = try halfClosed("GET", "/v1/users/u-half", scope: "read", body: nil)
        #expect(user.status == 200 && user.json["userId"]?.stringValue == "u-half", "\(user.text)")
        let health = try halfClosed("GET", "/healthz", scope: nil, body: nil)
        #expect(health.status == 200)
    }
}
