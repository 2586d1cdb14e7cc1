/// Why the server could not start. A struct around a code, so new causes don't break callers.
public struct HTTPServerError: Error, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let raw: String
        private init(_ raw: String) { self.raw = raw }
        public var description: String { raw }

        public static let portInUse = Code("portInUse")
        public static let invalidHost = Code("invalidHost")
        public static let socket = Code("socket")
        public static let daemon = Code("daemon")
        public static let alreadyStarted = Code("alreadyStarted")
    }

    public let code: Code
    /// One line naming the cause, fit for a start-up error message.
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
