/// Why the embedded PostgreSQL cluster could not be created, started or stopped.
/// `description` is one line naming the cause, fit for a fatal start-up message.
public struct EmbeddedPostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// initdb/pg_ctl (or the `postgres` OS user) is missing: install the `postgresql` package.
        case notInstalled
        /// The data directory cannot be created, read or written.
        case dataDirectory
        /// initdb failed.
        case initdb
        /// The server did not start (the message carries the tail of its log).
        case start
        /// The server did not stop.
        case stop
        /// Connecting or creating the application database failed.
        case database
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
