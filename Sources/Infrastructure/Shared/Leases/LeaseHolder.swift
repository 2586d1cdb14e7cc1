import EventStore
import Foundation
import Synchronization

/// This process as the holder of background-job leases (`ops.leases`, LeaseTable): its instance
/// name, shown to people (`IAP_LEDGER_INSTANCE`, default `<hostname>:<port>:<pid>`), a random
/// claim the table matches on (two processes given the same name never both hold a lease), and
/// one connection of its own for every lease statement. The jobs' own connections never carry
/// them: a renewal inside a job's open transaction would not be seen by the other instances
/// until that transaction ended, and a long one would let the lease lapse meanwhile.
///
/// Each lease statement is a short transaction of its own, and in transaction pool mode its
/// settings go with it (`SessionSettings`), so the connection may go through PgBouncer: nothing
/// is left on a pooled server connection. `lock_timeout` keeps an asker from waiting long on a lease row a holder's
/// write transaction has share-locked (ops.require_lease).
package final class LeaseHolder: Sendable {
    package let claim: String
    package let conninfo: String
    package let logger: Logger
    private let current: Mutex<String>
    private let connection = Mutex<Connection?>(nil)
    /// Weak: a lease holds its holder, and the jobs hold their leases.
    private let registered = Mutex<[String: Registered]>([:])

    /// Why this process must not hold any lease now (nil: it may). Set once at start; an
    /// instance whose code is older than the database's projections stands aside so that a
    /// current instance runs the jobs instead of them pausing until it stops (a rolling upgrade).
    private let standAside = Mutex<@Sendable () -> String?>({ nil })

    private struct Registered: @unchecked Sendable {
        weak var lease: Lease?
    }

    /// The lease statements' role and settings: per transaction through PgBouncer in transaction
    /// pooling (`Connection` sends them with each BEGIN), once per session otherwise.
    package let session: SessionSettings

    package init(name: String, conninfo: String, logger: Logger, poolMode: PoolMode = .session) {
        session = ServiceRole.session(poolMode).setting("statement_timeout", "5s").setting("lock_timeout", "1s")
        claim = UUID().uuidString.lowercased()
        current = Mutex(name)
        self.conninfo = conninfo
        self.logger = logger
    }

    package func standAside(when reason: @escaping @Sendable () -> String?) { standAside.withLock { $0 = reason } }

    /// The reason this process must hold no lease now, if any.
    package var reasonToStandAside: String? { standAside.withLock { $0 }() }

    /// The instance name in the table: `holder` of every lease it takes.
    package var name: String { current.withLock { $0 } }

    /// Names the instance once its HTTP port is known (a lease renewed afterwards shows it).
    package func rename(_ name: String) { current.withLock { $0 = name } }

    /// `<hostname>:<port>:<pid>`: unique per process on a machine, and says where to look.
    package static func defaultName(port: String) -> String {
        "\(ProcessInfo.processInfo.hostName):\(port):\(getpid())"
    }

    /// The lease `name` of this holder (one object per name, so metrics and the admin document
    /// see what the job sees).
    /// `standsAside`: whether the lease is given up while `reasonToStandAside` says so (every
    /// background job; not the replay's, which an operator asks for and which answers for itself).
    package func lease(_ name: String, timing: LeaseKeeper.Timing = .standard, standsAside: Bool = true) -> Lease {
        registered.withLock { leases in
            if let lease = leases[name]?.lease { return lease }
            let lease = Lease(name: name, holder: self, timing: timing, standsAside: standsAside)
            leases[name] = Registered(lease: lease)
            return lease
        }
    }

    /// Every lease a job of this process asked for, by name, with whether it holds it now.
    package var held: [(name: String, held: Bool)] {
        let leases = registered.withLock { $0.compactMap { $0.value.lease } }
        return leases.sorted { $0.name < $1.name }.map { ($0.name, $0.isHeld) }
    }

    /// Closes the holder's connection once every job has stopped (and released its lease).
    package func close() { connection.withLock { $0 = nil } }

    /// Runs one lease statement in a transaction of its own on the holder's connection
    /// (reconnecting after a failure).
    package func run(_ query: Query) throws(DatabaseError) -> Rows {
        try connection.withLock { connection throws(DatabaseError) -> Rows in
            if connection == nil || connection?.isHealthy == false {
                connection = nil
                connection = try Connection(conninfo, connectTimeout: 5, session: session)
            }
            do {
                return try connection!.transaction { connection in try connection.commit(after: [query.statement])[0] }
            } catch let error as DatabaseError {
                if connection?.isHealthy == false { connection = nil }
                throw error
            } catch {
                connection = nil
                throw DatabaseError(sqlState: "XX000", message: "\(error)")
            }
        }
    }

    /// Every row of the table (for `GET /v1/admin/projections`), on `connection`.
    package static func all(on connection: Connection) throws(DatabaseError) -> [LeaseTable.Row] {
        LeaseTable.decode(try connection.query(LeaseTable.all))
    }
}
