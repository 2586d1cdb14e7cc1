import Foundation

/// Runs `body(0..<count)` on `count` real threads at once (not the cooperative pool, whose
/// width is the core count) and waits for all of them: how the tests race writers and the
/// bench tool loads the pool.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            body(index)
            done.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    for _ in 0..<count { done.wait() }
}
