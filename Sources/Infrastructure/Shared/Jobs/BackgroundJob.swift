import EventStore

/// One periodic background job, as `JobRunner` runs it: every background loop of the service is
/// one of these (the change clock, the analytics projector, the reconciler, the consumption
/// responder, the catalog and projection-version polls), so each gets the same leasing, jitter,
/// failure logging, metrics and stop.
package struct BackgroundJob: Sendable {
    /// Who runs it.
    package enum Holder: Sendable {
        /// Every instance (a poll of what another instance may have changed).
        case everyInstance
        /// The one instance holding the lease (`ops.leases`): of several instances on one
        /// database one does the work, and another takes over within seconds when it stops or
        /// dies (LeaseKeeper.Timing). A holder that stalled past its lease may overlap its
        /// successor for the item in hand: each job says in its own comment why that item
        /// cannot be done twice.
        case leaseHolder(Lease)
    }

    /// Where its rounds get their connection.
    package enum Connections: Sendable {
        /// Borrowed from the pool for each round.
        case pooled(ConnectionPool)
        /// Its own, opened before its first round (then `prepare` runs on it, once per
        /// connection, whether or not the lease is held) and opened again after an error.
        case dedicated(
            conninfo: String, session: SessionSettings, prepare: (@Sendable (Connection) throws -> Void)? = nil)
    }

    package var name: String
    /// Seconds from the end of one round to the start of the next.
    package var interval: Double
    package var holder: Holder = .everyInstance
    package var connections: Connections
    /// Each wait is `interval` × (1 ± `jitter`): instances started together do not poll in step.
    package var jitter: Double = 0.1
    /// One round. A long round asks `JobRound.shouldStop` between items.
    package var round: @Sendable (Connection, JobRound) throws -> Void

    package init(
        name: String, interval: Double, holder: Holder = .everyInstance, connections: Connections, jitter: Double = 0.1,
        round: @escaping @Sendable (Connection, JobRound) throws -> Void
    ) {
        self.name = name
        self.interval = interval
        self.holder = holder
        self.connections = connections
        self.jitter = jitter
        self.round = round
    }
}

/// What a round of a job is given.
package struct JobRound {
    /// True once the runner stops the job or (leased jobs) the lease is lost: stop between
    /// items. For a leased job it also renews the lease when due.
    package let shouldStop: () -> Bool
    /// The job's lease, to be renewed beside one long transaction (`Lease.renewing`).
    package let lease: Lease?
}
