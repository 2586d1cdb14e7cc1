import EventStore
import Foundation
import Synchronization

/// A background thread that works only while it holds its lease (`ops.leases`, Lease): of
/// several service instances on one database one does the work, and when its holder stops the
/// lease is released (taken by another instance within a second), or, after a crash or
/// `kill -9`, runs out and is taken within 10 s (LeaseKeeper.Timing). The thread keeps a
/// dedicated connection for the work, opened once it first holds the lease and reopened after
/// an error; the lease's statements go over the holder's own connection, never this one.
///
/// A holder that stalled past its lease (a pause longer than the TTL) may overlap its successor
/// for the item in hand: each job says in its own comment why that item cannot be done twice.
final class LeasedLoop: Sendable {
    let name: String
    let conninfo: String
    let session: SessionSettings
    let lease: Lease
    let interval: Double
    let logger: Logger
    /// One round of work, run every `interval` while the lease is held; long rounds ask the
    /// closure they are given whether to stop between items. It also renews the lease when due
    /// and answers true once the lease is lost, so a holder that lost it stops working.
    private let work: @Sendable (Connection, _ isStopping: () -> Bool) throws -> Void
    private let stopping = Atomic<Bool>(false)
    private let begun = Atomic<Int>(0)
    private let ended = Atomic<Int>(0)
    /// nil: never started; false: running; true: its thread has ended.
    private let finished = Mutex<Bool?>(nil)

    init(
        name: String, conninfo: String, session: SessionSettings, lease: Lease, interval: Double, logger: Logger,
        work: @escaping @Sendable (Connection, _ isStopping: () -> Bool) throws -> Void
    ) {
        self.name = name
        self.conninfo = conninfo
        self.session = session
        self.lease = lease
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Whether a round that began after `mark()` has ended: a test's proof that the job looked
    /// again (and found nothing to do), polled instead of sleeping "longer than a round".
    struct Mark { let begun: Int }
    func mark() -> Mark { Mark(begun: begun.load(ordering: .sequentiallyConsistent)) }
    func hasRoundEnded(since mark: Mark) -> Bool { ended.load(ordering: .sequentiallyConsistent) > mark.begun }

    func start() {
        finished.withLock { $0 = false }
        let thread = Thread { [self] in
            run()
            finished.withLock { $0 = true }
        }
        thread.name = name
        thread.start()
    }

    /// Asks the thread to end and waits for it briefly (a round in flight may still finish; its
    /// lease then runs out by itself instead of being released).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        for _ in 0..<300 where finished.withLock({ $0 == false }) { Thread.sleep(forTimeInterval: 0.01) }
    }

    private func run() {
        var connection: Connection?
        var nextRound = Lease.now()
        while !isStopping {
            // Asked every slice (cheap unless due), so the lease is renewed and a free one taken
            // on time whatever the job's interval.
            let held = lease.keep()
            if held, Lease.now() >= nextRound {
                begun.add(1, ordering: .sequentiallyConsistent)
                defer { ended.add(1, ordering: .sequentiallyConsistent) }
                do {
                    if connection == nil || connection?.isHealthy == false {
                        connection = try Connection(conninfo, connectTimeout: 5, session: session)
                    }
                    try work(connection!) { self.isStopping || !self.lease.keep() }
                } catch {
                    logger.warning(name, ["error": "\(error)"])
                    connection = nil
                }
                nextRound = Lease.now() + interval
            }
            Thread.sleep(forTimeInterval: held ? max(0.01, min(0.25, nextRound - Lease.now())) : 0.25)
        }
        lease.release()
    }
}
