import Dispatch
import Infrastructure
import SystemCalls

/// Gathers requests that arrive together on different threads into batches, so that one
/// thread (the batch's leader) runs them all at once — for ingest, in one transaction with one
/// durable commit — while the others wait for their own answer.
///
/// At most `committers` batches run at once. A request that finds one free runs at once with
/// whatever is queued (alone, when nothing is: an idle service adds no latency). Otherwise it
/// queues; when a batch ends, its leader hands its place to the first queued request, which
/// leads the next batch with up to `maxSize - 1` of those queued behind it. So no one waits on a
/// timer: a batch is what arrived while the others ran, and batches grow with the load. Generic
/// over what is run so that the gathering can be tested without a database.
package final class GroupCommitter<Request, Answer>: @unchecked Sendable {
    package struct Limits: Sendable {
        /// Batches running at once (each on its own pooled connection).
        package var committers: Int
        /// Requests one batch takes at most.
        package var maxSize: Int

        package init(committers: Int, maxSize: Int) {
            self.committers = committers
            self.maxSize = maxSize
        }
    }

    package let limits: Limits

    private final class Ticket: @unchecked Sendable {
        let request: Request
        let done = DispatchSemaphore(value: 0)
        // Written under the committer's lock or by the leader before `done` is signalled, read
        // by the waiter after: the answer, or nil when the waiter is to lead the next batch.
        var answer: Answer?

        init(_ request: Request) { self.request = request }
    }

    private struct State {
        var queue: [Ticket] = []
        var running = 0
    }

    private let state = PlainMutex(State())

    /// Requests waiting for a committer: what a test polls to know every submitter is queued.
    package var queued: Int { state.withLock { $0.queue.count } }

    package init(limits: Limits) {
        precondition(limits.maxSize >= 1 && limits.committers >= 1, "a batch holds at least one request")
        self.limits = limits
    }

    /// Runs `request` in a batch (perhaps of one) and answers it; blocks until it is answered.
    /// `run` runs a batch on its leader's thread: one answer per request, in order (every
    /// submitter passes the same; it is taken per call so the committer holds no reference to
    /// its owner).
    package func submit(_ request: Request, run: ([Request]) -> [Answer]) -> Answer {
        let ticket = Ticket(request)
        let leads = state.withLock { state -> Bool in
            if state.running < limits.committers {
                state.running += 1
                return true
            }
            state.queue.append(ticket)
            return false
        }
        if !leads {
            ticket.done.wait()
            if let answer = ticket.answer { return answer }
            // Handed a place: lead the next batch.
        }
        let batch = state.withLock { state -> [Ticket] in
            let joining = state.queue.prefix(limits.maxSize - 1)
            state.queue.removeFirst(joining.count)
            return [ticket] + joining
        }
        let answers = run(batch.map(\.request))
        precondition(answers.count == batch.count, "one answer per request")
        for (waiter, answer) in zip(batch.dropFirst(), answers.dropFirst()) {
            waiter.answer = answer
            waiter.done.signal()
        }
        let next = state.withLock { state -> Ticket? in
            guard !state.queue.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.queue.removeFirst()
        }
        next?.done.signal()  // with no answer: it leads
        return answers[0]
    }
}
