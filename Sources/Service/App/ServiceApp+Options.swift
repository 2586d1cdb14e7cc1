import AppStore
import AppleAPI
import EventStore
import Foundation
import HTTP
import Infrastructure
import JSON
import Schema

extension ServiceApp {
    public struct Options: Sendable {
        public var configuration: Configuration = .empty
        /// The file `configuration` was read from, recorded with a new catalog version.
        public var configurationPath: String?
        public var host = "127.0.0.1"
        public var port = 8080
        /// Handler threads (`HandlerPool`): every route that may block (PostgreSQL, a group
        /// commit, Apple) runs on one, so this bounds the requests in progress.
        public var threads = 32
        /// libmicrohttpd's workers: they read requests, run the routes that never block
        /// (probes, metrics, the console's files, long polls) and send every answer.
        public var httpWorkers = 4
        /// Pooled PostgreSQL connections: bounds the transactions in progress (more than the
        /// cores PostgreSQL has only adds contention). Threads beyond it wait for a connection.
        public var databaseConnections = 8
        /// External PostgreSQL; nil starts the embedded cluster under `dataDirectory`.
        public var databaseURL: String?
        /// A streaming replica of `databaseURL` for history reads (`DATABASE_READ_URL`); nil: none.
        public var databaseReadURL: String?
        /// How long a history read waits for the replica to replay what it must see before the
        /// primary answers it instead (`IAP_LEDGER_REPLICA_WAIT_MS`).
        public var replicaWaitMillis = 100
        public var dataDirectory = "./.iap-ledger"
        /// `.transaction` when `databaseURL` is PgBouncer in `pool_mode = transaction`
        /// (`DATABASE_POOL_MODE`): no session state, settings per transaction (SessionSettings).
        public var databasePoolMode: PoolMode = .session
        /// Applied at start: the binary's own schema unless a test brings another.
        public var migrations: [Migration] = SchemaMigrations.all
        public var logger = Logger()
        public var clock: @Sendable () -> Int64 = Timestamp.nowMillis
        /// How long a valid API key's scopes are trusted without asking PostgreSQL again: a key
        /// revoked by another process (`iap-ledger keys revoke`) stops working within this time.
        public var keyCacheMillis: Int64 = KeyAuthenticator.defaultPositiveTTLMillis
        /// An idle or stalled HTTP connection is closed after this many seconds.
        public var connectionTimeoutSeconds = 30
        /// A statement running longer than this is cancelled (a stuck query must not hold a
        /// pool slot, and with it an HTTP worker, forever).
        public var statementTimeoutSeconds = 30
        /// A session left idle inside a transaction this long is closed by PostgreSQL, so a
        /// leaked transaction cannot hold row or advisory locks.
        public var idleInTransactionTimeoutSeconds = 60
        /// Memory for the in-process cache of user documents (`IAP_LEDGER_USER_CACHE_MB`); 0
        /// turns it off and every `GET /v1/users/{id}` queries PostgreSQL.
        public var userCacheBytes = 32 << 20
        /// Group commit of ingest (`IAP_LEDGER_INGEST_COMMITTERS`, `IAP_LEDGER_INGEST_BATCH_MAX`):
        /// how many ingest transactions run at once (0: no group commit, each request its own),
        /// the requests arriving meanwhile waiting to share the next; and how many one takes at most.
        public var ingestCommitters = 2
        public var ingestBatchMax = 16
        /// How often the change clock looks for documents time has changed (api.md §4 wants
        /// their changes within 5 s of the instant).
        public var changeClockInterval: Double = 1
        /// This instance's name as the holder of background-job leases (`IAP_LEDGER_INSTANCE`):
        /// shown by `GET /v1/admin/projections`; nil: `<hostname>:<port>:<pid>`.
        public var instanceName: String?
        /// Behind a load balancer: seconds between SIGTERM and the stop, /readyz answering 503
        /// meanwhile, so the balancer's health check moves traffic away before anything is
        /// refused (`IAP_LEDGER_DRAIN_SECONDS`). Read by `serve`, which owns the signals.
        public var drainSeconds = 0
        /// Who signs `POST /v1/offers/signatures` per app; nil: each app's `serverAPI` key
        /// (`OfferRoutes.signers(from:)`). Tests give a signer built from Apple's test key.
        package var offerSigners: OfferRoutes.SignerLookup?

        public init() {}
    }
}
