import EventStore
import Foundation
import Ledger
import Synchronization

/// Emits what time alone changes (api.md §4): a period ending, a grace period beginning or
/// ending, a non-renewing purchase or an admin grant running out, within seconds of the
/// instant, with `occurredAt` the instant.
///
/// Every stored document says until when it stays true (`proj.users.valid_until`, the next
/// instant its user's facts change by themselves). Each tick re-renders the documents that are
/// due, announcing what changed at each instant passed (`storeAnnouncing`). One instance ticks
/// at a time: the one holding a session advisory lock, which a dead holder's session frees, so
/// another takes over within a tick. Exactly once does not rest on the lock: each user is done
/// under the user's stream lock and only if the stored document is still due, so a second
/// clock, or a write that got there first, finds nothing left to announce.
final class ChangeClock: Sendable {
    static let lockKey = "iap-ledger:change-clock"
    /// Users re-rendered per query of due documents.
    static let batchSize = 200

    let service: LedgerService
    let conninfo: String
    let setupStatements: [String]
    let interval: Double
    private let stopping = Atomic<Bool>(false)
    private let finished = Mutex<Bool>(false)

    init(service: LedgerService, conninfo: String, setupStatements: [String], interval: Double = 1) {
        self.service = service
        self.conninfo = conninfo
        self.setupStatements = setupStatements
        self.interval = interval
    }

    func start() {
        let thread = Thread { [self] in
            run()
            finished.withLock { $0 = true }
        }
        thread.name = "change-clock"
        thread.start()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        for _ in 0..<300 where !finished.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
    }

    private func run() {
        var connection: Connection?
        var holdsLock = false
        while !stopping.load(ordering: .relaxed) {
            do {
                if connection == nil || connection?.isHealthy == false {
                    connection = try Connection(conninfo, connectTimeout: 5)
                    for statement in setupStatements { try connection!.executeScript(statement) }
                    holdsLock = false
                }
                if !holdsLock {
                    let rows = try connection!.query(
                        "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok", [Self.lockKey])
                    holdsLock = rows.bool(0, "ok") ?? false
                }
                if holdsLock {
                    while !stopping.load(ordering: .relaxed), try tick(on: connection!) == Self.batchSize {}
                }
            } catch {
                service.logger.warning("change clock", ["error": "\(error)"])
                connection = nil
            }
            Thread.sleep(forTimeInterval: interval)
        }
    }

    /// Re-renders the documents due now; answers how many users it looked at.
    @discardableResult
    func tick(on connection: Connection) throws -> Int {
        let now = service.clock()
        let due = try connection.query(UserDocumentsTable.due(now: now, limit: Self.batchSize))
        let users = (0..<due.count).compactMap { due[$0, 0] }
        for user in users where !stopping.load(ordering: .relaxed) {
            do {
                try service.announceElapsed(userId: user, now: now)
            } catch {
                service.logger.warning("change clock: user skipped", ["user": user, "error": "\(error)"])
            }
        }
        return users.count
    }
}

extension LedgerService {
    /// Announces what time changed for `userId` up to `now` and stores the document rendered
    /// at `now`, if the stored one is still due; nothing otherwise.
    func announceElapsed(userId: String, now: Int64) throws(ServiceError) {
        let changes = try unitOfWork { connection throws(ServiceError) -> [NewChange] in
            let documents = self.documents
            let window = try database { () throws(DatabaseError) -> Rows in
                try repository.lock([LedgerStream.user(userId)], on: connection)
                return try connection.query(UserDocumentsTable.window(of: userId))
            }
            guard window.count == 1, let validUntil = window[0, 1].flatMap({ Int64($0) }), validUntil <= now else {
                return []  // a write (or another clock) re-rendered it first
            }
            let world = try repository.loadUser(userId, on: connection)
            return try storeAnnouncing(world, documents: documents, now: now, on: connection).changes
        }
        changeTally.count(changes)
    }
}
