/// The `{name}` path parameters of a matched route, percent-decoded.
public struct Parameters: Sendable {
    private var storage: [(name: String, value: String)] = []

    public init() {}

    init(_ pairs: [(name: String, value: String)]) {
        storage = pairs
    }

    /// The decoded value of the parameter `name`, or nil when the route has no such parameter.
    public subscript(_ name: String) -> String? {
        for pair in storage where pair.name == name { return pair.value }
        return nil
    }
}
