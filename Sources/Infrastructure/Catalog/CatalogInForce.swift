import EventStore
import Foundation
import Synchronization

/// The catalog versions this process knows, newest last, and a poll that keeps them current:
/// every `interval` one primary-key lookup of the `catalog` stream's head, and on a new head the
/// new versions are read and `onChange` runs (the service drops its cached documents). So an
/// instance answers with a version recorded by another within `interval` plus one query.
///
/// Writes never depend on the poll being on time: each write of `proj.users` checks the head
/// in its own transaction (`es.require_catalog_version`), and one that rendered under an
/// older version is redone after `refresh`.
package final class CatalogInForce: Sendable {
    private let versions: Mutex<[CatalogVersion]>
    private let onChange: Mutex<(@Sendable (CatalogVersion) -> Void)?> = Mutex(nil)

    /// - Parameter versions: what start-up read (oldest first; empty: nothing recorded).
    package init(_ versions: [CatalogVersion]) {
        self.versions = Mutex(versions)
    }

    /// The version in force now.
    package var current: CatalogVersion { versions.withLock { $0.last ?? .none } }

    /// The version in force at `instant` (for `?asOf=`).
    package func at(_ instant: Int64) -> CatalogVersion {
        versions.withLock { CatalogVersions.inForce(at: instant, among: $0) }
    }

    /// Reads the head and any versions this process has not seen. True when one was new.
    @discardableResult
    package func refresh(on connection: Connection) throws(ServiceError) -> Bool {
        let known = current.version
        let head = try database { () throws(DatabaseError) in try CatalogVersions.head(on: connection) }
        guard head > known else { return false }
        let newer = try CatalogVersions.versions(after: known, on: connection)
        let switched = versions.withLock { versions -> CatalogVersion? in
            let last = versions.last?.version ?? 0
            let fresh = newer.filter { $0.version > last }
            guard !fresh.isEmpty else { return nil }  // another refresh got there first
            versions.append(contentsOf: fresh)
            return versions.last
        }
        // After the versions: a document rendered once `onChange` ran uses the new catalog.
        if let switched, let onChange = onChange.withLock({ $0 }) { onChange(switched) }
        return switched != nil
    }

    /// The poll as a background job (JobRunner) of every instance, on a pooled connection per
    /// check; `onChange` runs when a newer version came into force.
    package func makePollJob(
        pool: ConnectionPool, interval: Double = 0.25, onChange: @escaping @Sendable (CatalogVersion) -> Void
    )
        -> BackgroundJob
    {
        self.onChange.withLock { $0 = onChange }
        return BackgroundJob(name: "catalog-in-force", interval: interval, connections: .pooled(pool)) {
            [self] connection, _ in try refresh(on: connection)
        }
    }
}
