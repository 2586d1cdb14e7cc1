import AppStore
import EventStore
import Infrastructure
import Ledger

/// The shell every use case runs in — a unit of work on a pooled connection (retried on a
/// conflict, refused while newer code's projections are in force), a read, a history read, the
/// `AccountUseCase` runner — and what the shell holds (pool, catalog in force, caches, tallies).
/// The use cases themselves are the rooms' own types (`Ingestion`, `CustomerReads`,
/// `ChangeFeedReads`, `Identities`, `AppleRequests`, the `AccountUseCase`s), handed out below.
/// Handlers call it synchronously on the handler pool's threads (`HandlerPool`); the cached
/// user read asks for its answer from an HTTP worker and gets it from the cache check's thread.
public final class LedgerService: Sendable {
    let pool: ConnectionPool
    let repository: LedgerRepository
    let verifier: SignedDataVerifier
    let receipts: ReceiptVerifier?
    let configuration: Configuration
    /// The recorded catalog versions and the one in force (docs/api.md §1.1): never the config's
    /// alone, so every instance on the database answers under the same catalog.
    let catalogs: CatalogInForce
    let logger: Logger
    /// The clock, injectable so tests can judge documents at chosen instants.
    let clock: @Sendable () -> Int64
    /// The in-process cache of user documents and what keeps it exact; nil: every read queries.
    let documentCheck: UserDocumentCacheCheck?
    /// Changes written by this process, by type (`iap_changes_total`).
    let changeTally = ChangeTally()
    /// Where history reads go when `DATABASE_READ_URL` names a replica (nil: the primary).
    let readRouting: ReadRouting?
    /// Whether the database's projections were built by newer code (a rolling upgrade): then
    /// no write and no user document is served here.
    let projectionVersions: ProjectionVersionWatch
    /// Gathers concurrent ingest requests into shared transactions (nil: every request is its
    /// own; `IAP_LEDGER_INGEST_COMMITTERS`).
    let groupCommit: GroupCommitter<IngestRequest, IngestAnswer>?
    /// How many requests each durable commit of ingest carried (`iap_ingest_batch_size`).
    let ingestBatchSizes = IngestBatchSizes()
    /// Transactions of products missing from the catalog, per product (`UnconfiguredProductTally`).
    let unconfiguredProducts = UnconfiguredProductTally()
    /// Aliases resolved so far (api.md §7), for the cached user read.
    let knownAliases = KnownAliases()

    init(
        pool: ConnectionPool, verifier: SignedDataVerifier, receipts: ReceiptVerifier?, configuration: Configuration,
        logger: Logger, clock: @escaping @Sendable () -> Int64 = Timestamp.nowMillis,
        documentCheck: UserDocumentCacheCheck? = nil, catalogs: CatalogInForce? = nil, readRouting: ReadRouting? = nil,
        projectionVersions: ProjectionVersionWatch? = nil,
        groupCommit: GroupCommitter<IngestRequest, IngestAnswer>.Limits? = nil
    ) {
        self.groupCommit = groupCommit.map { GroupCommitter(limits: $0) }
        self.readRouting = readRouting
        self.projectionVersions = projectionVersions ?? ProjectionVersionWatch(logger: logger)
        self.documentCheck = documentCheck
        self.pool = pool
        self.repository = LedgerRepository(store: EventStore())
        self.catalogs = catalogs ?? CatalogInForce([])
        self.verifier = verifier
        self.receipts = receipts
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
    }

    /// The rooms' use cases, each its own type run by this shell: what the routes call.
    var ingestion: Ingestion { Ingestion(ledger: self) }
    var reads: CustomerReads { CustomerReads(ledger: self) }
    var feed: ChangeFeedReads { ChangeFeedReads(ledger: self) }
    var identities: Identities { Identities(ledger: self) }
    var apple: AppleRequests { AppleRequests(ledger: self) }

    /// The catalog in force now, as the renderer of documents. A unit of work takes it once and
    /// renders everything under it (its writes check it is still in force).
    var documents: UserDocuments {
        let inForce = catalogs.current
        return UserDocuments(catalog: inForce.catalog, catalogVersion: inForce.version)
    }

    /// Attempts of one unit of work before its error is answered. What is retried is transient
    /// and resolved by the retry itself — a deadlock or serialization failure (the other
    /// transaction went through), a version conflict, a newer catalog (one reload) — so more
    /// than a few in a row means something is wrong; each attempt costs a few milliseconds.
    static let attemptLimit = 8

    /// Runs `body` in a transaction on a pooled connection, retrying the whole unit of work on
    /// deadlocks, serialization failures and version conflicts, and after reloading the catalog
    /// when a newer version was recorded under it. Connection loss surfaces as
    /// `storeUnavailable` (503): nothing was acknowledged, the caller retries.
    ///
    /// The one gate of every write: refused (503 `projection_version_ahead`) while the database's
    /// projections were built by newer code; a write that finds so in its own transaction (the
    /// watch had not polled yet) rolls back and the watch is brought up to date at once.
    func unitOfWork<T>(_ body: (Connection) throws(ServiceError) -> T) throws(ServiceError) -> T {
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
    func reloadCatalog() throws(ServiceError) {
        try read { connection throws(ServiceError) in _ = try catalogs.refresh(on: connection) }
    }

    /// A read on a pooled connection, outside any explicit transaction.
    func read<T>(_ body: (Connection) throws(ServiceError) -> T) throws(ServiceError) -> T {
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

extension Configuration {
    /// The ledger's catalog: every configured app's products (product ids are globally unique
    /// in the App Store, so one map serves all apps).
    var catalog: Catalog {
        var products: [String: Ledger.Product] = [:]
        for app in apps {
            for (productId, product) in app.products {
                let type: ProductType =
                    switch product.kind {
                    case .consumable: .consumable
                    case .nonConsumable: .nonConsumable
                    case .subscription: .subscription
                    case .nonRenewing: .nonRenewing
                    }
                products[productId] = Ledger.Product(
                    type: type, entitlements: product.entitlements, grants: product.grants,
                    duration: product.duration.flatMap(ISODuration.init), period: product.period,
                    group: product.group)
            }
        }
        return Catalog(products: products)
    }

    var ledgerTransferPolicy: Ledger.TransferPolicy {
        transferPolicy == .keep ? .keep : .transfer
    }
}
