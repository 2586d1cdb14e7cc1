import HTTP
import JSON

/// The router answers 401/403/404/405 before any handler runs, so those problem+json bodies
/// lacked the `requestId` every handler problem carries. This adds it (the same id as the
/// `X-Request-Id` header), leaving every other response untouched.
enum ProblemRequestID {
    static func stamp(_ response: HTTPResponse, requestId: String) -> HTTPResponse {
        if let deferred = response.deferred {
            // A long poll's answer (or its 503 at shutdown) is stamped when it completes.
            deferred.whenCompleted { stamp($0, requestId: requestId) }
            return response
        }
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
