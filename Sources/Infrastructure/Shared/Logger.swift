import Foundation
import Synchronization

/// A tiny structured logger: one `key=value` line per event on standard error. Data goes in
/// metadata, never in the message, and secrets never go anywhere (callers pass ids, not keys).
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        package var word: String { ["debug", "info", "warning", "error"][rawValue] }
    }

    public var minimumLevel: Level
    public var metadata: [String: String]
    private let sink: @Sendable (String) -> Void

    public init(
        minimumLevel: Level = .info, metadata: [String: String] = [:],
        sink: @escaping @Sendable (String) -> Void = Logger.standardError
    ) {
        self.minimumLevel = minimumLevel
        self.metadata = metadata
        self.sink = sink
    }

    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    public static let silent = Logger(minimumLevel: .error, sink: { _ in })

    public func with(_ extra: [String: String]) -> Logger {
        var copy = self
        copy.metadata.merge(extra) { _, new in new }
        return copy
    }

    public func debug(_ message: String, _ extra: [String: String] = [:]) { log(.debug, message, extra) }
    public func info(_ message: String, _ extra: [String: String] = [:]) { log(.info, message, extra) }
    public func warning(_ message: String, _ extra: [String: String] = [:]) { log(.warning, message, extra) }
    public func error(_ message: String, _ extra: [String: String] = [:]) { log(.error, message, extra) }

    public func log(_ level: Level, _ message: String, _ extra: [String: String]) {
        guard level >= minimumLevel else { return }
        var line = "ts=\(Timestamp.rfc3339(Timestamp.nowMillis())) level=\(level.word) msg=\(Self.quote(message))"
        for (key, value) in metadata.merging(extra, uniquingKeysWith: { _, new in new }).sorted(by: { $0.key < $1.key })
        {
            line += " \(key)=\(Self.quote(value))"
        }
        sink(line + "\n")
    }

    package static func quote(_ value: String) -> String {
        let plain =
            !value.isEmpty
            && value.utf8.allSatisfy { $0 > 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "=") && $0 < 0x7F }
        if plain { return value }
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}
