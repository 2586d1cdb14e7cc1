import AppStore
import EventStore
import Ledger

/// Every way a use case can fail, as the API reports it. `ErrorMapping` is the one place that
/// turns these into problem+json responses.
public enum ServiceError: Error, Sendable {
    /// The request itself is wrong (missing field, bad JSON, bad parameter).
    case invalidRequest(String)
    /// The signed data or receipt did not verify; never reaches the log.
    case verificationFailed(VerificationError)
    /// verifyReceipt answered with a non-zero, non-retryable status.
    case receiptRejected(appleStatus: Int, detail: String)
    /// Apple could not be reached or kept failing: retry later.
    case appleUnavailable(String)
    /// The App Store Server API refused the request (its 4xx): Apple's HTTP status and `errorCode`.
    case appleRejected(status: Int, appleErrorCode: Int64?, detail: String)
    /// PostgreSQL is unreachable: retry later (nothing was acknowledged).
    case storeUnavailable(String)
    /// The domain refused the command (owned by another user, insufficient balance).
    case rejected(Rejection)
    case notFound(String)
    /// A concurrent writer got there first; the unit of work is retried.
    case conflict(String)
    /// A replay is already running.
    case busy(String)
    /// The request needs an app's App Store Server API key (`serverAPI`) and that app has none.
    case serverAPINotConfigured(String)
    /// The chain asked about is not an auto-renewable subscription (only those can be extended).
    case notAutoRenewable(String)
    /// The request names an app (`bundleId`) the config does not have.
    case unknownApp(String)
    /// The request names a store environment its app does not accept.
    case wrongEnvironment(String)
    /// The database's projection was built by newer code than this instance's (a rolling
    /// upgrade in progress): this instance writes nothing and renders no document until upgraded.
    case projectionVersionAhead(ProjectionVersionAhead)
    /// The person was recorded before the log named users by subject (migration 0047): their
    /// first events are in clear, and erasing them needs the log migration of `iap-ledger migrate`
    /// (`LogMigration`; docs/architecture.md).
    case erasureNeedsLogMigration(String)
    /// A bug or an unexpected database error; details go to the log, not to the client.
    case internalError(String)

    /// Classifies a database error: connection trouble is retryable, anything else is ours.
    /// A newer catalog version in force (IC001) is a conflict: the unit of work is redone under it.
    package static func database(_ error: DatabaseError) -> ServiceError {
        if error.sqlState == LedgerSQLState.staleCatalogVersion { return .conflict(error.message) }
        if error.sqlState == LedgerSQLState.projectionVersionAhead {
            return .projectionVersionAhead(ProjectionVersionAhead.refused(error))
        }
        // A statement that waited past the session's statement timeout (for a lock held by the
        // log migration, say) or was cancelled rolled its transaction back: retry, not a bug.
        if error.isConnectionFailure || error.sqlState == "57014" || error.sqlState == "55P03" {
            return .storeUnavailable(error.message)
        }
        return .internalError("\(error)")
    }
}

/// Carries a typed `ServiceError` through the untyped `throws` of pool and transaction closures.
package struct ServiceErrorBox: Error {
    package var error: ServiceError

    package init(error: ServiceError) {
        self.error = error
    }

    /// What such a closure threw, as the service's error: the boxed one, a database failure
    /// (503 when the connection is gone), or anything else as an internal error.
    package static func unbox(_ error: any Error) -> ServiceError {
        switch error {
        case let box as ServiceErrorBox: box.error
        case let error as DatabaseError: .database(error)
        default: .internalError("\(error)")
        }
    }
}

/// The SQLSTATEs the schema's own checks raise, read where database errors are classified.
package enum LedgerSQLState {
    /// `es.require_catalog_version` (migration 0023): a newer catalog version is in force.
    package static let staleCatalogVersion = "IC001"
    /// `es.require_projection_version` (migration 0033); its DETAIL is the database's version.
    package static let projectionVersionAhead = "IC002"
}

/// Maps a database failure of `body` into the service's error (503 when the connection is gone).
package func database<T>(_ body: () throws(DatabaseError) -> T) throws(ServiceError) -> T {
    do {
        return try body()
    } catch {
        throw .database(error)
    }
}
