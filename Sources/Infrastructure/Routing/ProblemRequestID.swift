import HTTP
import JSON

/// Every problem is written with its `requestId` (ErrorMapping, the router's 401/403/404/405,
/// the 413 before routing) but one: a long poll completed by the HTTP server's registry (its 503
/// at shutdown), which does not know whose request it was. Such a completion gets the id here
/// (the same as the `X-Request-Id` header); every other response passes untouched.
package enum ProblemRequestID {
    package static func stamp(_ response: HTTPResponse, requestId: String) -> HTTPResponse {
        guard let deferred = response.deferred else { return response }
        deferred.whenCompleted { completed($0, requestId: requestId) }
        return response
    }

    private static func completed(_ response: HTTPResponse, requestId: String) -> HTTPResponse {
        guard response.status >= 400, response.headers["Content-Type"] == "application/problem+json",
            case .object(var members)? = try? JSONValue.parse(response.body), members["requestId"] == nil
        else { return response }
        members["requestId"] = .string(requestId)
        var writer = JSONWriter(capacity: response.body.count + requestId.utf8.count + 16)
        writer.beginObject()
        // The standard members first, in the order HTTPResponse.problem writes them.
        for key in ["type", "title", "status", "detail", "code"] where members[key] != nil {
            writer.key(key)
            writer.value(members.removeValue(forKey: key)!)
        }
        for key in members.keys.sorted() {
            writer.key(key)
            writer.value(members[key]!)
        }
        writer.endObject()
        var stamped = response
        stamped.body = writer.bytes
        return stamped
    }
}
