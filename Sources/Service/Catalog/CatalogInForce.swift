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
final class CatalogInForce: Sendable {
    private let versions: Mutex<[CatalogVersion]>
    private let onChange: Mutex<(@Sendable (CatalogVersion) -> Void)?> = Mutex(nil)
    private let stopping = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    private let polling = Atomic<Bool>(false)

    /// - Parameter versions: what start-up read (oldest first; empty: nothing recorded).
    init(_ versions: [CatalogVersion]) {
        self.versions = Mutex(versions)
    }

    /// The version in force now.
    var current: CatalogVersion { versions.withLock { $0.last ?? .none } }

    /// The version in force at `instant` (for `?asOf=`).
    func at(_ instant: Int64) -> CatalogVersion {
        versions.withLock { CatalogVersions.inForce(at: instant, among: $0) }
    }

    /// Reads the head and any versions this process has not seen. True when one was new.
    @discardableResult
    func refresh(on connection: Connection) throws(ServiceError) -> Bool {
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

    /// Starts the poll on a thread of its own, borrowing a pooled connection per check.
    func startPolling(
        pool: ConnectionPool, interval: Double = 0.25, logger: Logger,
        onChange: @escaping @Sendable (CatalogVersion) -> Void
    ) {
        self.onChange.withLock { $0 = onChange }
        guard !polling.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread { [self] in
            var failing = false
            while !stopping.load(ordering: .relaxed) {
                do {
                    try pool.withConnection { connection in
                        do throws(ServiceError) { try refresh(on: connection) } catch {
                            throw ServiceErrorBox(error: error)
                        }
                    }
                    failing = false
                } catch {
                    if !failing { logger.warning("catalog: cannot check for a new version", ["error": "\(error)"]) }
                    failing = true
                }
                Thread.sleep(forTimeInterval: interval)
            }
            exited.signal()
        }
        thread.name = "catalog-in-force"
        thread.start()
    }

    /// Stops the poll (once; later calls return at once).
    func stop() {
        guard polling.load(ordering: .relaxed), !stopping.exchange(true, ordering: .relaxed) else { return }
        _ = exited.wait(timeout: .now() + 5)
    }
}
