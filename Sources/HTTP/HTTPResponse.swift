/// What a handler answers. `Content-Length` is computed by the server; never set it here.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header fields to send, by name as written.
    public var headers: [String: String]
    public var body: [UInt8]
    /// Set by `HTTPResponse.deferred(_:)`: the real answer comes later through this handle.
    public internal(set) var deferred: HTTPDeferred?

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with an `application/json` body (already serialized).
    public static func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: jsonHeaders, body: body)
    }

    /// Shared, not a dictionary built per response: the server adds `X-Request-Id` without
    /// touching `headers`, so a JSON answer allocates no header storage of its own.
    private static let jsonHeaders = ["Content-Type": "application/json"]

    /// A response with a `text/plain; charset=utf-8` body.
    public static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8")
        -> HTTPResponse
    {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }
}
