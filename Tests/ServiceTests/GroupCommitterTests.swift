import Foundation
import Synchronization
import Testing

@testable import Service

/// How the group committer gathers requests from threads, with a stand-in for the batch (no
/// database): who leads, when a batch closes, and that every request gets its own answer.
@Suite struct GroupCommitterTests {
    /// Runs batches by answering each request doubled, and remembers each batch.
    final class Runs: Sendable {
        let batches = Mutex<[[Int]]>([])
        func run(_ requests: [Int]) -> [Int] {
            batches.withLock { $0.append(requests) }
            return requests.map { $0 * 2 }
        }
    }

    @Test func aRequestWithNoOtherInFlightRunsAtOnceAlone() {
        let committer = GroupCommitter<Int, Int>(limits: .init(windowMicros: 10_000_000, maxSize: 16))
        let runs = Runs()
        #expect(committer.submit(21, run: runs.run) == 42)
        #expect(committer.submit(5, run: runs.run) == 10)
        #expect(runs.batches.withLock { $0 } == [[21], [5]])
    }

    /// Eight requests arrive while another is in flight: batches of `maxSize` close as they fill.
    @Test func requestsArrivingWhileAnotherIsInFlightAreGatheredUpToTheMaximum() throws {
        let committer = GroupCommitter<Int, Int>(limits: .init(windowMicros: 10_000_000, maxSize: 4))
        let runs = Runs()
        let answers = Mutex<[Int: Int]>([:])
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        done.enter()
        Thread.detachNewThread {
            // In flight until released, so the others see company and wait for each other.
            let answer = committer.submit(0) { requests in
                holding.signal()
                release.wait()
                return runs.run(requests)
            }
            answers.withLock { $0[0] = answer }
            done.leave()
        }
        holding.wait()
        for request in 1...8 {
            done.enter()
            Thread.detachNewThread {
                let answer = committer.submit(request, run: runs.run)
                answers.withLock { $0[request] = answer }
                done.leave()
            }
        }
        // Both batches fill and run while the first request is still held.
        let deadline = Date().addingTimeInterval(10)
        while runs.batches.withLock({ $0.count }) < 2, Date() < deadline { usleep(1000) }
        release.signal()
        done.wait()
        let batches = runs.batches.withLock { $0 }
        #expect(batches.count == 3, "\(batches)")
        #expect(batches.prefix(2).map(\.count) == [4, 4], "\(batches)")
        #expect(Set(batches.prefix(2).joined()) == Set(1...8))
        #expect(batches.last == [0])
        #expect(answers.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0...8).map { ($0, $0 * 2) }))
    }

    @Test func aBatchThatDoesNotFillRunsWhenTheWindowEnds() {
        let committer = GroupCommitter<Int, Int>(limits: .init(windowMicros: 300_000, maxSize: 16))
        let runs = Runs()
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        done.enter()
        Thread.detachNewThread {
            _ = committer.submit(0) { requests in
                holding.signal()
                release.wait()
                return runs.run(requests)
            }
            done.leave()
        }
        holding.wait()
        for request in 1...3 {
            done.enter()
            Thread.detachNewThread {
                _ = committer.submit(request, run: runs.run)
                done.leave()
            }
        }
        let deadline = Date().addingTimeInterval(10)
        while runs.batches.withLock({ $0.count }) < 1, Date() < deadline { usleep(1000) }
        release.signal()
        done.wait()
        let batches = runs.batches.withLock { $0 }
        #expect(batches.count == 2, "\(batches)")
        #expect(batches.first.map { Set($0) } == [1, 2, 3])
    }
}
