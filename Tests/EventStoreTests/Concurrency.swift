import Foundation

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

/// Polls `read` until it answers a non-empty array (or 10 s pass), like a catch-up loop would.
func eventually<T>(until done: ([T]) -> Bool = { !$0.isEmpty }, _ read: () throws -> [T]) throws -> [T] {
    let deadline = ContinuousClock.now + .seconds(10)
    while true {
        let value = try read()
        if done(value) || ContinuousClock.now > deadline { return value }
        Thread.sleep(forTimeInterval: 0.02)
    }
}
