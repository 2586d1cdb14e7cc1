import JSON

/// The service's API as a test calls it: one kept-alive `HTTPTestConnection`, an API key sent
/// with every request, JSON bodies. Each thread that needs its own connection makes its own client.
public final class ServiceHTTPClient {
    public typealias Failure = HTTPTestConnection.Failure
    public typealias Response = HTTPTestConnection.Response

    private let port: Int
    private var connection: HTTPTestConnection?
    /// Sent with every request as `Authorization: Bearer <key>` unless a call overrides it.
    public var apiKey: String?

    public init(port: Int, apiKey: String? = nil) {
        self.port = port
        self.apiKey = apiKey
    }

    public func get(_ target: String, apiKey: String?? = .none, headers: [String: String] = [:]) throws -> Response {
        try request("GET", target, apiKey: apiKey, headers: headers)
    }

    /// POSTs `body` serialized as JSON.
    public func post(_ target: String, _ body: JSONValue, apiKey: String?? = .none, headers: [String: String] = [:])
        throws -> Response
    {
        try request("POST", target, apiKey: apiKey, headers: headers, body: body.serialized())
    }

    /// One request; `apiKey: .some(nil)` sends no Authorization header. Reconnects once when the
    /// server closed the kept-alive connection in between.
    public func request(
        _ method: String, _ target: String, apiKey: String?? = .none, headers: [String: String] = [:],
        body: [UInt8]? = nil
    ) throws -> Response {
        var ordered: [(name: String, value: String)] = []
        if let key = apiKey ?? self.apiKey { ordered.append(("Authorization", "Bearer \(key)")) }
        ordered += headers.map { ($0.key, $0.value) }
        var body = body
        if body != nil || method == "POST" {
            ordered.append(("Content-Type", "application/json"))
            body = body ?? []
        }
        var attempt = 0
        while true {
            attempt += 1
            let reused = connection != nil
            do {
                let current = try connection ?? HTTPTestConnection(port: port)
                connection = current
                let response = try current.request(method, target, orderedHeaders: ordered, body: body)
                if response.headers["connection"]?.lowercased() == "close" { connection = nil }
                return response
            } catch {
                connection = nil
                // Only a kept-alive connection the server closed meanwhile is worth a second try.
                if !reused || attempt >= 2 { throw error }
            }
        }
    }
}
