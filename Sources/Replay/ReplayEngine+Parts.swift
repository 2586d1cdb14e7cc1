import Dispatch
import Infrastructure
import Synchronization

extension ReplayEngine {
    /// Splits `0..<count` into `parallelism` contiguous ranges and runs `body` on each, one thread
    /// per range (what the bodies read is shared, never written); the results in range order.
    package static func inParts<T: Sendable>(_ count: Int, _ body: @Sendable (Range<Int>) -> T) -> [T] {
        let parts = parallelism
        let per = (count + parts - 1) / max(parts, 1)
        let results = Mutex<[Int: T]>([:])
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let result = body(min(count, part * per)..<min(count, (part + 1) * per))
            results.withLock { $0[part] = result }
        }
        let all = results.withLock { $0 }
        return (0..<parts).compactMap { all[$0] }
    }
}
