import Dispatch
import SystemCalls

/// Gathers requests that arrive together on different threads into batches, so that one
/// thread (the batch's leader) runs them all at once — for ingest, in one transaction with one
/// durable commit — while the others wait for their own answer.
///
/// The first request to find no open batch leads one. When no other request is in flight it
/// runs at once, alone: an idle service adds no latency. Otherwise it waits up to `window`
/// for others to join, or until `maxSize` have; later arrivals open the next batch, and
/// batches run side by side (each on its own pooled connection). Generic over what is run so
/// that the gathering can be tested without a database.
final class GroupCommitter<Request, Answer>: @unchecked Sendable {
    struct Limits: Sendable {
        /// How long a leader waits for others to join (microseconds).
        var windowMicros: Int
        /// A batch closes as soon as it has this many requests.
        var maxSize: Int
    }

    let limits: Limits

    private final class Ticket: @unchecked Sendable {
        let request: Request
        let done = DispatchSemaphore(value: 0)
        // Written by the leader before `done` is signalled, read by the waiter after.
        var answer: Answer?

        init(_ request: Request) { self.request = request }
    }

    private final class Batch: @unchecked Sendable {
        var tickets: [Ticket]
        /// Signalled when the batch fills: its leader stops waiting.
        let full = DispatchSemaphore(value: 0)

        init(_ leader: Ticket) { tickets = [leader] }
    }

    private struct State {
        var open: Batch?
        /// Requests submitted and not yet answered.
        var inFlight = 0
    }

    private let state = PlainMutex(State())

    init(limits: Limits) {
        precondition(limits.maxSize >= 1 && limits.windowMicros >= 0, "a batch holds at least one request")
        self.limits = limits
    }

    private enum Role {
        case alone
        case leader(Batch)
        case follower
    }

    /// Runs `request` in a batch (perhaps of one) and answers it; blocks until it is answered.
    /// `run` runs a batch on its leader's thread: one answer per request, in order (every
    /// submitter passes the same; it is taken per call so the committer holds no reference to
    /// its owner).
    func submit(_ request: Request, run: ([Request]) -> [Answer]) -> Answer {
        let ticket = Ticket(request)
        let role = state.withLock { state -> Role in
            state.inFlight += 1
            if let open = state.open {
                open.tickets.append(ticket)
                if open.tickets.count >= limits.maxSize {
                    state.open = nil
                    open.full.signal()
                }
                return .follower
            }
            if state.inFlight == 1 || limits.maxSize == 1 || limits.windowMicros == 0 { return .alone }
            let batch = Batch(ticket)
            state.open = batch
            return .leader(batch)
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        switch role {
        case .alone:
            return run([request])[0]
        case .follower:
            ticket.done.wait()
            return ticket.answer!
        case .leader(let batch):
            _ = batch.full.wait(timeout: .now() + .microseconds(limits.windowMicros))
            let tickets = state.withLock { state -> [Ticket] in
                if state.open === batch { state.open = nil }
                return batch.tickets
            }
            let answers = run(tickets.map(\.request))
            precondition(answers.count == tickets.count, "one answer per request")
            for (waiter, answer) in zip(tickets.dropFirst(), answers.dropFirst()) {
                waiter.answer = answer
                waiter.done.signal()
            }
            return answers[0]
        }
    }
}
