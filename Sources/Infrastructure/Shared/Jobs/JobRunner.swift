import EventStore
import Foundation
import HTTP
import Synchronization

/// Runs the service's periodic background jobs (`BackgroundJob`), each on a thread of its own,
/// one way for all: a leased job works only while its instance holds the lease, rounds are spaced
/// by the job's interval with jitter, a failure is logged once per run of failures (and its
/// dedicated connection dropped), every round is counted, and `stopAll` stops the jobs in the
/// reverse order of their start, each given the same time to finish the round in hand before
/// its lease is released (a round that outlives it lets the lease run out by itself).
///
/// Metrics: `iap_job_rounds_total{job,outcome}` (ok, failed) and
/// `iap_job_seconds_since_success{job}` (since start while none succeeded yet): what an alert
/// on a stuck job reads.
package final class JobRunner: Sendable {
    /// How long `stop` waits for a round in hand.
    package static let stopSeconds = 5.0

    private let logger: Logger
    private let rounds: Counter?
    private let jobs = Mutex<[RunningJob]>([])

    package init(logger: Logger, registry: MetricsRegistry? = nil) {
        self.logger = logger
        rounds = registry?.counter(
            "iap_job_rounds_total", help: "Rounds of each background job run here, by outcome (ok, failed).",
            labels: ["job", "outcome"])
        registry?.gauge(
            "iap_job_seconds_since_success",
            help: "Seconds since the job's last successful round here (since it started, while none succeeded).",
            labels: ["job"]
        ) { [weak self] in
            let now = Lease.now()
            return (self?.jobs.withLock { $0 } ?? []).map { ([$0.job.name], now - $0.lastSuccess) }
        }
    }

    /// Starts `job` on a thread of its own.
    @discardableResult
    package func start(_ job: BackgroundJob) -> RunningJob {
        let running = RunningJob(job: job, logger: logger, rounds: rounds)
        jobs.withLock { $0.append(running) }
        running.start()
        return running
    }

    /// The job named `name`, if it runs here (tests wait for its rounds).
    package func running(named name: String) -> RunningJob? {
        jobs.withLock { $0 }.last { $0.job.name == name }
    }

    /// Stops the jobs named `name` (a test freezing what one poll knows).
    package func stop(named name: String) {
        for job in jobs.withLock({ $0 }) where job.job.name == name { job.stop() }
    }

    /// Stops every job, the last started first (each waits for its round in hand, briefly).
    package func stopAll() {
        let started = jobs.withLock { $0 }
        for job in started.reversed() { job.stop() }
    }
}

/// A job `JobRunner` started.
package final class RunningJob: Sendable {
    package let job: BackgroundJob
    private let logger: Logger
    private let rounds: Counter?
    private let stopping = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    private let success = Atomic<UInt64>(0)
    private let begun = Atomic<Int>(0)
    private let ended = Atomic<Int>(0)

    fileprivate init(job: BackgroundJob, logger: Logger, rounds: Counter?) {
        self.job = job
        self.logger = logger
        self.rounds = rounds
        success.store(Lease.now().bitPattern, ordering: .relaxed)
    }

    /// Monotonic seconds (`Lease.now`) of the last successful round (of the start before one).
    package var lastSuccess: Double { Double(bitPattern: success.load(ordering: .relaxed)) }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Whether a round that began after `mark()` has ended: a test's proof that the job looked
    /// again (and found nothing to do), polled instead of sleeping "longer than a round".
    package struct Mark { let begun: Int }
    package func mark() -> Mark { Mark(begun: begun.load(ordering: .sequentiallyConsistent)) }
    package func hasRoundEnded(since mark: Mark) -> Bool { ended.load(ordering: .sequentiallyConsistent) > mark.begun }

    private var lease: Lease? {
        if case .leaseHolder(let lease) = job.holder { return lease }
        return nil
    }

    fileprivate func start() {
        let thread = Thread { [self] in
            run()
            exited.signal()
        }
        thread.name = job.name
        thread.start()
    }

    /// Asks the job to stop and waits for its round in hand (up to `JobRunner.stopSeconds`);
    /// once (later calls return at once).
    package func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        _ = exited.wait(timeout: .now() + JobRunner.stopSeconds)
    }

    private func run() {
        var connection: Connection?
        var nextRound = Lease.now()
        var failing = false
        while !isStopping {
            var tried = false
            do {
                if case .dedicated(let conninfo, let session, let prepare?) = job.connections,
                    connection == nil || connection?.isHealthy == false
                {
                    // Prepared whether or not the lease is held (e.g. publishing this instance's catalog).
                    connection = try Connection(conninfo, connectTimeout: 5, session: session)
                    try prepare(connection!)
                }
                // Asked every slice (cheap unless due), so a lease is renewed and a free one
                // taken on time whatever the job's interval.
                let held = lease?.keep() ?? true
                if held, Lease.now() >= nextRound {
                    tried = true
                    try round(&connection)
                    success.store(Lease.now().bitPattern, ordering: .relaxed)
                    rounds?.increment([job.name, "ok"])
                    if failing { logger.info("\(job.name): working again") }
                    failing = false
                }
            } catch {
                tried = true
                rounds?.increment([job.name, "failed"])
                if !failing { logger.warning(job.name, ["error": "\(error)"]) }
                failing = true
                connection = nil
            }
            // The interval runs from the end of a round (or of a failure: never a tight retry loop).
            if tried { nextRound = Lease.now() + job.interval * Double.random(in: (1 - job.jitter)...(1 + job.jitter)) }
            let held = lease?.isHeld ?? true
            let wait = held ? max(0.01, min(0.25, nextRound - Lease.now())) : 0.25
            Thread.sleep(forTimeInterval: wait)
        }
        lease?.release()
    }

    private func round(_ connection: inout Connection?) throws {
        begun.add(1, ordering: .sequentiallyConsistent)
        defer { ended.add(1, ordering: .sequentiallyConsistent) }
        let context = JobRound(shouldStop: { [self] in isStopping || !(lease?.keep() ?? true) }, lease: lease)
        switch job.connections {
        case .pooled(let pool):
            try pool.withConnection { connection in try job.round(connection, context) }
        case .dedicated(let conninfo, let session, _):
            if connection == nil || connection?.isHealthy == false {
                connection = try Connection(conninfo, connectTimeout: 5, session: session)
            }
            try job.round(connection!, context)
        }
    }
}
