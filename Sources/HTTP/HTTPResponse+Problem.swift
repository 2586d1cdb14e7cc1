import JSON

extension HTTPResponse {
    /// The base of every problem `type`: each stable `code` gets its own URI under it.
    public static let problemTypeBase = "https://iap-ledger.dev/problems/"

    /// An RFC 9457 `application/problem+json` response:
    /// `{"type","title","status","detail","code", …extra}` with `type` = `problemTypeBase + code`.
    /// Keys of `extra` that collide with the five standard members are ignored.
    public static func problem(
        status: Int, code: String, title: String, detail: String, extra: [String: JSONValue] = [:]
    ) -> HTTPResponse {
        var w = JSONWriter(capacity: 128 + detail.utf8.count)
        w.beginObject()
        w.key("type")
        w.string(problemTypeBase + code)
        w.key("title")
        w.string(title)
        w.key("status")
        w.int(Int64(status))
        w.key("detail")
        w.string(detail)
        w.key("code")
        w.string(code)
        for key in extra.keys.sorted() where !reservedProblemKeys.contains(key) {
            w.key(key)
            w.value(extra[key]!)
        }
        w.endObject()
        return HTTPResponse(status: status, headers: ["Content-Type": "application/problem+json"], body: w.bytes)
    }

    private static let reservedProblemKeys: Set<String> = ["type", "title", "status", "detail", "code"]
}
