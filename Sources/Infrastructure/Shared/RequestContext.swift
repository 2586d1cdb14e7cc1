import JSON

/// Who asked, for event metadata and logs: the request id and the API key's name (never its secret).
public struct RequestContext: Sendable {
    public var requestId: String
    public var keyName: String?
    public var source: String

    public init(requestId: String, keyName: String? = nil, source: String) {
        self.requestId = requestId
        self.keyName = keyName
        self.source = source
    }

    /// Event metadata: where the fact came from, for audits and the analyst's lineage questions.
    package var metadata: [UInt8] {
        var writer = JSONWriter(capacity: 96)
        writer.beginObject()
        writer.key("source")
        writer.string(source)
        writer.key("requestId")
        writer.string(requestId)
        if let keyName {
            writer.key("apiKey")
            writer.string(keyName)
        }
        writer.endObject()
        return writer.bytes
    }
}
