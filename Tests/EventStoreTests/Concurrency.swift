import Foundation
import TestSupport

/// A reusable barrier for `count` threads.
final class Barrier: @unchecked Sendable {
    private let condition = NSCondition()
    private let count: Int
    private var arrived = 0
    private var generation = 0

    init(_ count: Int) { self.count = count }

    func wait() {
        condition.lock()
        defer { condition.unlock() }
        let current = generation
        arrived += 1
        if arrived == count {
            arrived = 0
            generation += 1
            condition.broadcast()
        } else {
            while generation == current { condition.wait() }
        }
    }
}

func json(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Reads with `read` until it answers a non-empty array (or 10 s pass), like a catch-up loop
/// would; answers the last read either way (the caller's expectations say what is missing).
func readUntil<T>(_ done: ([T]) -> Bool = { !$0.isEmpty }, _ read: () throws -> [T]) throws -> [T] {
    var value = try read()
    try? eventually("a read to satisfy the test", within: 10) {
        value = try read()
        return done(value)
    }
    return value
}
