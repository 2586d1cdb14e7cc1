/// What a holder knows of one lease, and when it should ask the table again: pure (times are
/// seconds of a monotonic clock, passed in), so its rules are tested without a database.
/// `Lease` is the thin shell that runs the statements it asks for.
///
/// Taken over within 10 s: a holder that dies right after renewing leaves `ttl` (6 s) on its
/// lease, and every other instance asks for a free lease every `retryEvery` (1 s) plus its job's
/// poll (≤ 1 s), so one has it by 8 s. A live holder renews every `renewEvery` (2 s): two failed
/// renewals in a row still leave it the lease.
package struct LeaseKeeper: Sendable, Equatable {
    package struct Timing: Sendable, Equatable {
        package var ttl: Double = 6
        package var renewEvery: Double = 2
        package var retryEvery: Double = 1
        /// The holder stops trusting its lease this long before the table's expiry: the table's
        /// clock started counting after the holder sent the statement, never before, so the
        /// holder's own deadline (sent + ttl − margin) is the earlier of the two.
        package var margin: Double = 0.5

        package static let standard = Timing()
        package var ttlMillis: Int64 { Int64((ttl * 1000).rounded()) }
    }

    /// What an answer of the table changed, to log it.
    package enum Change: Sendable, Equatable {
        case acquired(token: Int64)
        case renewed
        /// It was ours and another holder has it now, or its time ran out before a renewal came through.
        case lost
        case none
    }

    package let timing: Timing
    /// The fencing token while held.
    package private(set) var token: Int64?
    /// Until when this holder may act on the lease (monotonic seconds).
    package private(set) var heldUntil: Double = -.infinity
    /// When to ask the table next.
    package private(set) var nextAsk: Double = -.infinity
    /// Open transactions of this holder that passed the fence (LeaseTable.require). Each holds
    /// the lease row FOR SHARE until it ends, so the lease cannot change hands meanwhile
    /// whatever the clock says, and a renewal (an UPDATE of that row) would only wait for it.
    package private(set) var fences = 0
    /// A fenced transaction ended after the deadline: the lease was ours until then, and the
    /// next answer with the same token continues it (a renewal, not a new acquisition).
    private var continuing = false

    package init(timing: Timing = .standard) { self.timing = timing }

    package func isHeld(at now: Double) -> Bool { token != nil && (fences > 0 || now < heldUntil) }

    /// Time to run acquire-or-renew (never while fenced: it would wait on our own row lock).
    package func isDue(at now: Double) -> Bool { fences == 0 && now >= nextAsk }

    /// The table answered the acquire-or-renew sent at `sentAt` (nil: another holder has it).
    package mutating func answered(_ grant: LeaseTable.Granted?, sentAt: Double) -> Change {
        let wasHeld = isHeld(at: sentAt)
        guard let grant else {
            let had = token != nil
            continuing = false
            token = nil
            heldUntil = -.infinity
            nextAsk = sentAt + timing.retryEvery
            return had ? .lost : .none
        }
        let previous = token
        let continued = continuing
        continuing = false
        token = grant.token
        heldUntil = sentAt + timing.ttl - timing.margin
        nextAsk = sentAt + timing.renewEvery
        if previous == grant.token && (wasHeld || continued) { return .renewed }
        return .acquired(token: grant.token)
    }

    /// A transaction of this holder passed the fence: held until it ends.
    package mutating func fenceTaken() { fences += 1 }

    /// That transaction ended (committed or not) at `now`. Past the deadline the lease is ours
    /// only until another instance takes the expired row: not held, and asked for at once.
    package mutating func fenceEnded(at now: Double) {
        guard fences > 0 else { return }
        fences -= 1
        guard fences == 0, token != nil, now >= heldUntil else { return }
        heldUntil = now
        nextAsk = now
        continuing = true
    }

    /// The statement failed (the database is unreachable, a timeout): the lease may still be
    /// ours until `heldUntil`; ask again soon.
    package mutating func failed(at now: Double) -> Change {
        nextAsk = now + timing.retryEvery
        return expire(at: now)
    }

    /// Forgets a lease whose time ran out without a renewal.
    package mutating func expire(at now: Double) -> Change {
        guard token != nil, fences == 0, now >= heldUntil else { return .none }
        continuing = false
        token = nil
        heldUntil = -.infinity
        return .lost
    }

    /// Given up on purpose (the row was deleted): free for anyone at once.
    package mutating func released(at now: Double) {
        continuing = false
        token = nil
        heldUntil = -.infinity
        nextAsk = now
    }
}
