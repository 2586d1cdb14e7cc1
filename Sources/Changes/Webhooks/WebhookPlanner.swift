import Infrastructure

/// The decisions of webhook delivery for one endpoint, with no I/O (the house's sans-IO rule):
/// which open deliveries to send now, and what an attempt's outcome makes of its delivery. The
/// dispatcher (WebhookDispatcher) reads the rows, sends, and writes back what this answers.
///
/// Rules (api.md §4):
/// - per user, cursor order: a user's later change waits while an earlier one is open (pending
///   or failed, including one in flight); a dead one no longer blocks;
/// - a 2xx within the timeout delivers; anything else (another status, a redirect, a timeout, a
///   connection error) is a failed attempt, retried after `retrySchedule[k]` seconds (k = failures
///   so far, with ± `jitter` drawn from the injected random source), then dead.
package struct WebhookPlanner {
    package enum Status: String, Sendable { case pending, delivered, failed, dead }

    /// An open delivery as the dispatcher loaded it.
    package struct Open: Sendable, Equatable {
        package var seq: Int64
        package var cursor: FeedCursor
        package var userId: String?
        package var failures: Int
        package var nextAttemptAt: Int64

        package init(seq: Int64, cursor: FeedCursor, userId: String?, failures: Int, nextAttemptAt: Int64) {
            self.seq = seq
            self.cursor = cursor
            self.userId = userId
            self.failures = failures
            self.nextAttemptAt = nextAttemptAt
        }
    }

    /// What one attempt came to.
    package enum Outcome: Sendable, Equatable {
        case response(status: Int)
        /// No usable response: timeout, connection refused, TLS, a cut-off answer.
        case error(String)
    }

    /// What to write for a finished attempt.
    package struct Update: Sendable, Equatable {
        package var seq: Int64
        package var status: Status
        package var failures: Int
        /// Unchanged (the attempt's time) unless failed: the next attempt's time.
        package var nextAttemptAt: Int64
        package var attemptedAt: Int64
        package var httpStatus: Int?
        package var error: String?
        package var durationMs: Int
    }

    package let retrySchedule: [Double]
    package let timeoutMillis: Int64
    /// Sends in flight at most, over all users of the endpoint.
    package let maxInFlight: Int
    /// ± this share of each delay, so a receiver's many failed deliveries do not all come back at once.
    package let jitter: Double
    /// A value in [0, 1).
    package let random: () -> Double
    /// seq → user of every send started and not yet completed.
    package private(set) var inFlight: [Int64: String?] = [:]

    package init(endpoint: WebhookEndpoint, maxInFlight: Int = 32, jitter: Double = 0.1, random: @escaping () -> Double)
    {
        retrySchedule = endpoint.retrySchedule
        timeoutMillis = Int64(endpoint.timeoutSeconds * 1000)
        self.maxInFlight = maxInFlight
        self.jitter = jitter
        self.random = random
    }

    /// Which of `open` (one endpoint's open deliveries, in cursor order) to send at `now`; they
    /// are in flight from then until `completed`. `wakeAt` is the earliest time a delivery not
    /// sent now may become due (nil: none is waiting on time).
    package mutating func due(_ open: [Open], now: Int64) -> (sends: [Open], wakeAt: Int64?) {
        var blocked = Set<String>()
        for user in inFlight.values { if let user { blocked.insert(user) } }
        var sends: [Open] = []
        var wakeAt: Int64?
        for delivery in open {
            if inFlight.count >= maxInFlight { break }
            if inFlight[delivery.seq] != nil { continue }
            if let user = delivery.userId {
                // The user's first open delivery decides; every later one waits behind it.
                guard blocked.insert(user).inserted else { continue }
            }
            guard delivery.nextAttemptAt <= now else {
                wakeAt = min(wakeAt ?? delivery.nextAttemptAt, delivery.nextAttemptAt)
                continue
            }
            inFlight[delivery.seq] = .some(delivery.userId)
            sends.append(delivery)
        }
        return (sends, wakeAt)
    }

    /// What the attempt on `delivery` that started at `startedAt` and ended at `now` makes of it.
    package mutating func completed(_ delivery: Open, outcome: Outcome, startedAt: Int64, now: Int64) -> Update {
        inFlight[delivery.seq] = nil
        let duration = max(0, now - startedAt)
        var update = Update(
            seq: delivery.seq, status: .delivered, failures: delivery.failures, nextAttemptAt: delivery.nextAttemptAt,
            attemptedAt: startedAt, httpStatus: nil, error: nil, durationMs: Int(min(duration, Int64(Int32.max))))
        switch outcome {
        case .response(let status):
            update.httpStatus = status
            if (200..<300).contains(status) && duration <= timeoutMillis { return update }
            if (200..<300).contains(status) { update.error = "answered after the timeout" }
            if (300..<400).contains(status) { update.error = "redirect not followed" }
        case .error(let message):
            update.error = message
        }
        update.failures = delivery.failures + 1
        guard update.failures <= retrySchedule.count else {
            update.status = .dead
            return update
        }
        let delay = retrySchedule[update.failures - 1] * (1 + jitter * (2 * random() - 1))
        update.status = .failed
        update.nextAttemptAt = now + Int64((delay * 1000).rounded())
        return update
    }

    /// Forgets sends that never started (their change could not be read): they stay open in
    /// the table, untouched, and come up again in a later round.
    package mutating func abandon(_ seqs: [Int64]) {
        for seq in seqs { inFlight[seq] = nil }
    }

    /// The changes of `page` this endpoint takes (its filters), as new pending deliveries.
    package static func accepted(_ page: [StoredChange], by endpoint: WebhookEndpoint) -> [StoredChange] {
        page.filter { endpoint.accepts(type: $0.type, environment: $0.environment) }
    }
}
