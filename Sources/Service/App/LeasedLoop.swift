import EventStore
import Foundation
import Synchronization

/// A background thread that works only while it holds a session advisory lock: of several
/// service instances on one database one does the work, and when its session ends (a stop, a
/// crash, `kill -9`) the lock is free and another takes it within `interval`. The thread keeps a
/// dedicated connection (the session that holds the lock), reconnecting after an error.
final class LeasedLoop: Sendable {
    let name: String
    let conninfo: String
    let session: SessionSettings
    let lockKey: String
    let interval: Double
    let logger: Logger
    /// One round of work, run every `interval` while the lock is held; long rounds ask the
    /// closure they are given whether to stop between items.
    private let work: @Sendable (Connection, _ isStopping: () -> Bool) throws -> Void
    private let stopping = Atomic<Bool>(false)
    /// nil: never started; false: running; true: its thread has ended.
    private let finished = Mutex<Bool?>(nil)

    init(
        name: String, conninfo: String, session: SessionSettings, lockKey: String, interval: Double, logger: Logger,
        work: @escaping @Sendable (Connection, _ isStopping: () -> Bool) throws -> Void
    ) {
        self.name = name
        self.conninfo = conninfo
        self.session = session
        self.lockKey = lockKey
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    func start() {
        finished.withLock { $0 = false }
        let thread = Thread { [self] in
            run()
            finished.withLock { $0 = true }
        }
        thread.name = name
        thread.start()
    }

    /// Asks the thread to end and waits for it briefly (a round in flight may still finish).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        for _ in 0..<300 where finished.withLock({ $0 == false }) { Thread.sleep(forTimeInterval: 0.01) }
    }

    private func run() {
        var connection: Connection?
        var holdsLock = false
        while !isStopping {
            do {
                if connection == nil || connection?.isHealthy == false {
                    connection = try Connection(conninfo, connectTimeout: 5, session: session)
                    holdsLock = false
                }
                if !holdsLock {
                    let rows = try connection!.query(
                        "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok", [lockKey])
                    holdsLock = rows.bool(0, "ok") ?? false
                }
                if holdsLock { try work(connection!) { self.isStopping } }
            } catch {
                logger.warning(name, ["error": "\(error)"])
                connection = nil
            }
            Thread.sleep(forTimeInterval: interval)
        }
    }
}
