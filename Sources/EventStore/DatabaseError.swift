/// A failure reported by PostgreSQL or by libpq, carrying the SQLSTATE and the server's message.
///
/// Client-side failures (no server reply: connection refused, socket closed) use the standard
/// connection-class codes `08001`/`08006`, so callers only ever switch on SQLSTATE.
public struct DatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Five-character SQLSTATE, e.g. `23505` (unique violation) or `08006` (connection failure).
    public let sqlState: String
    /// PostgreSQL's primary message (or libpq's, for client-side failures).
    public let message: String
    /// PostgreSQL's DETAIL line, if any.
    public let detail: String?
    /// The violated constraint, if any.
    public let constraint: String?

    public init(sqlState: String, message: String, detail: String? = nil, constraint: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
    }

    /// The connection is gone (class 08, or the server is shutting down / restarting: 57P01–57P03).
    /// The pool discards such a connection; the next call reconnects.
    public var isConnectionFailure: Bool {
        sqlState.hasPrefix("08") || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
    }

    /// Retrying the whole unit of work later may succeed (the Service answers 503 + Retry-After
    /// for connection failures, and retries serialization failures / deadlocks itself).
    public var isRetryable: Bool {
        isConnectionFailure || sqlState == "40001" || sqlState == "40P01" || sqlState == "53300"
    }

    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// `ES001`: `es.append` was not the first write of its transaction (a programming error:
    /// it would break per-stream (tx, seq) order, docs/eventstore.md §1.1).
    public static let appendNotFirstWrite = "ES001"
    /// `ES002`: an UPDATE/DELETE/TRUNCATE on the append-only `es.events`/`es.inbox`.
    public static let appendOnlyViolation = "ES002"

    public var description: String {
        var text = "PostgreSQL error \(sqlState): \(message)"
        if let detail { text += " (\(detail))" }
        return text
    }

    /// `08001`: no connection could be established (server down, socket missing, timeout).
    static func unableToConnect(_ message: String) -> DatabaseError {
        DatabaseError(sqlState: "08001", message: message)
    }

    /// `08006`: the connection broke while in use.
    static func connectionFailure(_ message: String) -> DatabaseError {
        DatabaseError(sqlState: "08006", message: message)
    }

    /// `53300` (too_many_connections): no pooled connection became free in time.
    static func poolExhausted(_ message: String) -> DatabaseError {
        DatabaseError(sqlState: "53300", message: message)
    }
}
