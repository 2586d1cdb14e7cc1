import EventStore
import Foundation
import Infrastructure
import Ledger
import Synchronization

/// Emits what time alone changes (api.md §4): a period ending, a grace period beginning or
/// ending, a non-renewing purchase or an admin grant running out, within seconds of the
/// instant, with `occurredAt` the instant.
///
/// Every stored document says until when it stays true (`proj.users.valid_until`, the next
/// instant its user's facts change by themselves). Each tick re-renders the documents that are
/// due, announcing what changed at each instant passed (`storeAnnouncing`). One instance ticks
/// at a time: the holder of the `change-clock` lease (a leased BackgroundJob), which another instance takes
/// over when its holder stops or dies. Exactly once does not rest on the lease: each user is
/// done under the user's stream lock and only if the stored document is still due (a
/// compare-and-set), so a second clock — a holder that stalled past its lease — or a write that
/// got there first finds nothing left to announce.
package final class ChangeClock: Sendable {
    package static let leaseName = "change-clock"
    /// Users re-rendered per query of due documents.
    package static let batchSize = 200

    /// The clock as a background job (JobRunner), run by the holder of its lease.
    package let job: BackgroundJob

    package init(
        service: LedgerService, conninfo: String, session: SessionSettings, leases: LeaseHolder, interval: Double = 1
    ) {
        job = BackgroundJob(
            name: Self.leaseName, interval: interval, holder: .leaseHolder(leases.lease(Self.leaseName)),
            connections: .dedicated(conninfo: conninfo, session: session)
        ) { connection, round in
            while !round.shouldStop(),
                try Self.tick(service, on: connection, isStopping: round.shouldStop) == Self.batchSize
            {}
        }
    }

    /// Re-renders the documents due now; answers how many users it looked at.
    @discardableResult
    package static func tick(_ service: LedgerService, on connection: Connection, isStopping: () -> Bool) throws -> Int
    {
        // Built by newer code: every re-render would be refused (and logged); the watch said why once.
        guard service.projectionVersions.projectionsAhead.isEmpty else { return 0 }
        let now = service.clock()
        let due = try connection.query(UserDocumentsTable.due(now: now, limit: batchSize))
        let users = (0..<due.count).compactMap { due[$0, 0] }
        for user in users where !isStopping() {
            do {
                try announceElapsed(userId: user, now: now, service: service)
            } catch {
                service.logger.warning("change clock: user skipped", ["user": user, "error": "\(error)"])
            }
        }
        return users.count
    }
}

extension ChangeClock {
    /// Announces what time changed for `userId` up to `now` and stores the document rendered
    /// at `now`, if the stored one is still due; nothing otherwise.
    package static func announceElapsed(userId: String, now: Int64, service: LedgerService) throws(ServiceError) {
        let repository = service.repository
        let changes = try service.unitOfWork { connection throws(ServiceError) -> [NewChange] in
            let documents = service.documents
            let window = try database { () throws(DatabaseError) -> Rows in
                try repository.lock([LedgerStream.user(userId)], on: connection)
                return try connection.query(UserDocumentsTable.window(of: userId))
            }
            guard window.count == 1, let validUntil = window[0, 1].flatMap({ Int64($0) }), validUntil <= now else {
                return []  // a write (or another clock) re-rendered it first
            }
            let world = try repository.loadUser(userId, on: connection)
            return try UserDocumentWriter.storeAnnouncing(world, documents: documents, now: now, on: connection).changes
        }
        service.changeTally.count(changes)
    }
}
