import AppStore
import EventStore
import Ledger

/// The shell every use case runs in — a unit of work on a pooled connection (retried on a
/// conflict, refused while newer code's projections are in force), a read, a history read, the
/// `AccountUseCase` runner, the alias resolution — and what every room shares through it (pool,
/// verifier, catalog in force, clock, tallies). It lives below the rooms so that none of them
/// needs the composition root: the use cases are the rooms' own types (`Ingestion`,
/// `CustomerReads`, `Identities`, `AppleRequests`…), built once by the composition root with
/// this shell and their own state (the group committer, the document cache), never held here.
/// Handlers call it synchronously on the handler pool's threads (`HandlerPool`).
public final class LedgerService: Sendable {
    package let pool: ConnectionPool
    package let repository: LedgerRepository
    package let verifier: SignedDataVerifier
    package let receipts: ReceiptVerifier?
    package let configuration: Configuration
    /// The recorded catalog versions and the one in force (docs/api.md §1.1): never the config's
    /// alone, so every instance on the database answers under the same catalog.
    package let catalogs: CatalogInForce
    package let logger: Logger
    /// The clock, injectable so tests can judge documents at chosen instants.
    package let clock: @Sendable () -> Int64
    /// Changes written by this process, by type (`iap_changes_total`).
    package let changeTally = ChangeTally()
    /// Where history reads go when `DATABASE_READ_URL` names a replica (nil: the primary).
    package let readRouting: ReadRouting?
    /// Whether the database's projections were built by newer code (a rolling upgrade): then
    /// no write and no user document is served here.
    package let projectionVersions: ProjectionVersionWatch
    /// Transactions of products missing from the catalog, per product (`UnconfiguredProductTally`).
    package let unconfiguredProducts = UnconfiguredProductTally()
    /// Aliases resolved so far (api.md §7), for the cached user read.
    package let knownAliases = KnownAliases()

    package init(
        pool: ConnectionPool, verifier: SignedDataVerifier, receipts: ReceiptVerifier?, configuration: Configuration,
        logger: Logger, clock: @escaping @Sendable () -> Int64 = Timestamp.nowMillis,
        catalogs: CatalogInForce? = nil, readRouting: ReadRouting? = nil,
        projectionVersions: ProjectionVersionWatch? = nil
    ) {
        self.readRouting = readRouting
        self.projectionVersions = projectionVersions ?? ProjectionVersionWatch(logger: logger)
        self.pool = pool
        self.repository = LedgerRepository(store: EventStore())
        self.catalogs = catalogs ?? CatalogInForce([])
        self.verifier = verifier
        self.receipts = receipts
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
    }

    /// The catalog in force now, as the renderer of documents. A unit of work takes it once and
    /// renders everything under it (its writes check it is still in force).
    package var documents: UserDocuments {
        let inForce = catalogs.current
        return UserDocuments(catalog: inForce.catalog, catalogVersion: inForce.version)
    }

    /// Attempts of one unit of work before its error is answered. What is retried is transient
    /// and resolved by the retry itself — a deadlock or serialization failure (the other
    /// transaction went through), a version conflict, a newer catalog (one reload) — so more
    /// than a few in a row means something is wrong; each attempt costs a few milliseconds.
    package static let attemptLimit = 8

    /// Runs `body` in a transaction on a pooled connection, retrying the whole unit of work on
    /// deadlocks, serialization failures and version conflicts, and after reloading the catalog
    /// when a newer version was recorded under it. Connection loss surfaces as
    /// `storeUnavailable` (503): nothing was acknowledged, the caller retries.
    ///
    /// The one gate of every write: refused (503 `projection_version_ahead`) while the database's
    /// projections were built by newer code; a write that finds so in its own transaction (the
    /// watch had not polled yet) rolls back and the watch is brought up to date at once.
    package func unitOfWork<T>(_ body: (Connection) throws(ServiceError) -> T) throws(ServiceError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            try projectionVersions.requireCurrent()
            do {
                return try pool.withConnection { connection in
                    try connection.transaction { connection in
                        do throws(ServiceError) {
                            return try body(connection)
                        } catch {
                            throw ServiceErrorBox(error: error)
                        }
                    }
                }
            } catch let box as ServiceErrorBox {
                if case .projectionVersionAhead = box.error { projectionVersions.refresh(pool: pool) }
                if case .conflict = box.error, attempt < Self.attemptLimit {
                    // A conflict may be a newer catalog in force (IC001): one lookup tells.
                    try reloadCatalog()
                    continue
                }
                throw box.error
            } catch let error as DatabaseError {
                if (error.sqlState == "40001" || error.sqlState == "40P01") && attempt < Self.attemptLimit { continue }
                if error.sqlState == ProjectionVersionWatch.aheadState { projectionVersions.refresh(pool: pool) }
                if error.sqlState == CatalogVersions.staleVersionState && attempt < Self.attemptLimit {
                    try reloadCatalog()
                    continue
                }
                throw .database(error)
            } catch {
                throw .internalError("\(error)")
            }
        }
    }

    /// Reads the catalog versions recorded since this process last looked (a write found a
    /// newer one in force before the poll did).
    package func reloadCatalog() throws(ServiceError) {
        try read { connection throws(ServiceError) in _ = try catalogs.refresh(on: connection) }
    }

    /// A read on a pooled connection, outside any explicit transaction.
    package func read<T>(_ body: (Connection) throws(ServiceError) -> T) throws(ServiceError) -> T {
        do {
            return try pool.withConnection { connection in
                do throws(ServiceError) {
                    return try body(connection)
                } catch {
                    throw ServiceErrorBox(error: error)
                }
            }
        } catch {
            throw ServiceErrorBox.unbox(error)
        }
    }
}
