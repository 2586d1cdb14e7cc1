import Foundation

/// Files under `Tests/Fixtures/apple`, found from this file's location.
enum Fixture {
    static let apple = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/apple")

    static func text(_ path: String) throws -> String {
        try String(contentsOf: apple.appendingPathComponent(path), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: apple.appendingPathComponent(path)))
    }
}
