import Dispatch
import Foundation
import SystemCalls

/// Threads that run handlers which block (on PostgreSQL, a group commit, Apple) off MHD's
/// workers: `run` suspends the request's connection and answers it when the handler returns.
/// So a few MHD workers parse and answer every connection, and a request waiting for
/// PostgreSQL holds a pool thread, never a worker: a read answered from memory (suspended on
/// its own event, or answered at once) never queues behind writes.
///
/// Each request costs one hand-over (a queue under a plain mutex, a semaphore) and a suspend
/// and resume of its connection; the pool's threads block only on their own work.
public final class HandlerPool: Sendable {
    private struct Jobs {
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var stopping = false
        var running = 0
    }

    private let jobs = PlainMutex(Jobs())
    private let ready = DispatchSemaphore(value: 0)
    /// Entered by each thread at start, left when it ends: `stop` (from any caller, any number of
    /// times) waits on it.
    private let running = DispatchGroup()
    public let threadCount: Int

    public init(threads: Int, name: String = "http-handler") {
        threadCount = max(1, threads)
        for index in 0..<threadCount {
            running.enter()
            let thread = Thread { [self] in work() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Runs `handler` on a pool thread and answers the request with what it returns (a
    /// deferred response of its own is waited for in turn). After `stop()`, on the caller's
    /// thread.
    public func run(_ handler: @escaping @Sendable () -> HTTPResponse) -> HTTPResponse {
        let deferred = HTTPDeferred(completedByOwner: ())
        guard enqueue({ Self.answer(deferred, with: handler()) }) else { return handler() }
        return .deferred(deferred)
    }

    /// Runs `job` on a pool thread (after `stop()`, at once on the caller's): for work that
    /// completes a handle of its own, e.g. a read whose cache could not answer it.
    public func execute(_ job: @escaping @Sendable () -> Void) {
        if !enqueue(job) { job() }
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        let queued = jobs.withLock { jobs -> Bool in
            guard !jobs.stopping else { return false }
            jobs.queue.append(job)
            return true
        }
        if queued { ready.signal() }
        return queued
    }

    /// Jobs queued or running right now (for metrics and tests).
    public var pending: Int {
        jobs.withLock { $0.queue.count - $0.head + $0.running }
    }

    /// Lets the queued and running jobs finish, then ends the threads. Like `MHD_stop_daemon`
    /// joining workers that run handlers, it waits for every one (a replay started over HTTP
    /// included): what they use is stopped after this returns.
    /// Idempotent: a second call waits for the same end.
    public func stop() {
        let first = jobs.withLock { jobs -> Bool in
            defer { jobs.stopping = true }
            return !jobs.stopping
        }
        if first {
            for _ in 0..<threadCount { ready.signal() }
        }
        running.wait()
    }

    /// A handler that itself answered later hands its handle's answer on when that completes
    /// (its deadline armed here, as no connection attaches it). Long polls are better routed
    /// inline: `stop()` spares a pool request for the grace period, where it ends a poll at once.
    private static func answer(_ deferred: HTTPDeferred, with response: HTTPResponse) {
        guard let inner = response.deferred else {
            deferred.complete(response)
            return
        }
        inner.whenCompleted { final in
            deferred.complete(final)
            return final
        }
        inner.armDeadline(maxWait: .seconds(120))
    }

    private func work() {
        while true {
            ready.wait()
            let job = jobs.withLock { jobs -> (@Sendable () -> Void)?? in
                guard jobs.head < jobs.queue.count else { return jobs.stopping ? .some(nil) : nil }
                let job = jobs.queue[jobs.head]
                jobs.head += 1
                if jobs.head > 1024 && jobs.head * 2 > jobs.queue.count {
                    jobs.queue.removeFirst(jobs.head)
                    jobs.head = 0
                }
                jobs.running += 1
                return .some(job)
            }
            guard let job else { continue }  // a spurious signal: another thread took it
            guard let job else { break }  // stopping, and nothing left
            job()
            jobs.withLock { $0.running -= 1 }
        }
        running.leave()
    }
}
