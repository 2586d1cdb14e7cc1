import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Infrastructure
@testable import Ingest
@testable import Service

/// How the group committer gathers requests from threads, with a stand-in for the batch (no
/// database): who leads, what a batch takes, and that every request gets its own answer.
@Suite struct GroupCommitterTests {
    /// Runs batches by answering each request doubled, and remembers each batch.
    final class Runs: Sendable {
        let batches = Mutex<[[Int]]>([])
        func run(_ requests: [Int]) -> [Int] {
            batches.withLock { $0.append(requests) }
            return requests.map { $0 * 2 }
        }
    }

    @Test func aRequestFindingAFreeCommitterRunsAtOnceAlone() {
        let committer = GroupCommitter<Int, Int>(limits: .init(committers: 1, maxSize: 16))
        let runs = Runs()
        #expect(committer.submit(21, run: runs.run) == 42)
        #expect(committer.submit(5, run: runs.run) == 10)
        #expect(runs.batches.withLock { $0 } == [[21], [5]])
    }

    /// Starts `request` on its own thread with a batch that blocks until `release` is signalled.
    func hold(
        _ committer: GroupCommitter<Int, Int>, _ request: Int, _ runs: Runs, release: DispatchSemaphore,
        done: DispatchGroup
    ) {
        let holding = DispatchSemaphore(value: 0)
        done.enter()
        Thread.detachNewThread {
            _ = committer.submit(request) { requests in
                holding.signal()
                release.wait()
                return runs.run(requests)
            }
            done.leave()
        }
        holding.wait()
    }

    /// Nine requests queue while both committers are busy; as each committer frees, the first
    /// queued leads the next batch with up to `maxSize - 1` of those behind it.
    @Test func requestsQueuedBehindBusyCommittersAreTakenInBatchesOfAtMostTheMaximum() throws {
        let committer = GroupCommitter<Int, Int>(limits: .init(committers: 2, maxSize: 4))
        let runs = Runs()
        let answers = Mutex<[Int: Int]>([:])
        let release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        hold(committer, 100, runs, release: release, done: done)
        hold(committer, 200, runs, release: release, done: done)
        for request in 1...9 {
            done.enter()
            Thread.detachNewThread {
                let answer = committer.submit(request, run: runs.run)
                answers.withLock { $0[request] = answer }
                done.leave()
            }
        }
        try eventually("all nine queued behind the busy committers", within: 10) { committer.queued == 9 }
        #expect(runs.batches.withLock { $0.isEmpty })
        release.signal()
        release.signal()
        done.wait()
        let batches = runs.batches.withLock { $0 }
        let queuedBatches = batches.filter { !$0.contains(100) && !$0.contains(200) }
        #expect(queuedBatches.map(\.count).sorted() == [1, 4, 4], "\(batches)")
        #expect(Set(queuedBatches.joined()) == Set(1...9))
        #expect(answers.withLock { $0 } == Dictionary(uniqueKeysWithValues: (1...9).map { ($0, $0 * 2) }))
    }

    @Test func aQueuedRequestIsAnsweredByTheBatchItJoinedNotRunTwice() throws {
        let committer = GroupCommitter<Int, Int>(limits: .init(committers: 1, maxSize: 16))
        let runs = Runs()
        let release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        hold(committer, 0, runs, release: release, done: done)
        for request in 1...5 {
            done.enter()
            Thread.detachNewThread {
                #expect(committer.submit(request, run: runs.run) == request * 2)
                done.leave()
            }
        }
        try eventually("all five queued behind the busy committer", within: 10) { committer.queued == 5 }
        release.signal()
        done.wait()
        let batches = runs.batches.withLock { $0 }
        #expect(batches.count == 2, "\(batches)")
        #expect(batches.last.map { Set($0) } == Set(1...5))
        #expect(batches.joined().count == 6)
    }
}
