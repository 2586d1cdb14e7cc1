/// An event to append. `data` and `metadata` are JSON documents (UTF-8 bytes).
public struct NewEvent: Sendable, Equatable {
    public var type: String
    public var schemaVersion: Int
    public var data: [UInt8]
    public var metadata: [UInt8]
    /// The verified source the event was derived from (JWS or verifyReceipt JSON), if any.
    public var payload: String?

    public init(
        type: String, schemaVersion: Int = 1, data: [UInt8], metadata: [UInt8] = Array("{}".utf8),
        payload: String? = nil
    ) {
        self.type = type
        self.schemaVersion = schemaVersion
        self.data = data
        self.metadata = metadata
        self.payload = payload
    }
}

/// What the writer believes the stream's head to be.
public enum ExpectedVersion: Sendable, Hashable {
    /// No check.
    case any
    /// The stream must not exist yet (head 0).
    case noStream
    /// The stream's head must be exactly this version.
    case exactly(Int64)

    var parameter: String? {
        switch self {
        case .any: nil
        case .noStream: "0"
        case .exactly(let version): String(version)
        }
    }
}

/// The events one command appends to one stream.
public struct StreamAppend: Sendable, Equatable {
    public var stream: String
    public var expectedVersion: ExpectedVersion
    public var events: [NewEvent]

    public init(stream: String, expectedVersion: ExpectedVersion, events: [NewEvent]) {
        self.stream = stream
        self.expectedVersion = expectedVersion
        self.events = events
    }
}

/// Identifies an external fact once, e.g. `("apple", notificationUUID)`.
public struct IdempotencyKey: Sendable, Hashable {
    public var source: String
    public var externalId: String

    public init(source: String, externalId: String) {
        self.source = source
        self.externalId = externalId
    }
}

/// An event as stored.
public struct RecordedEvent: Sendable, Equatable {
    /// Global id, unique, assigned at insert (not commit) order; may have gaps.
    public var seq: Int64
    /// The writing transaction's id (xid8); `(tx, seq)` is the catch-up order.
    public var tx: UInt64
    public var stream: String
    /// Position in the stream, from 1, dense.
    public var version: Int64
    public var type: String
    public var schemaVersion: Int
    public var data: [UInt8]
    public var metadata: [UInt8]
    public var payload: String?
    /// Milliseconds since the Unix epoch.
    public var recordedAt: Int64

    public init(
        seq: Int64, tx: UInt64, stream: String, version: Int64, type: String, schemaVersion: Int,
        data: [UInt8], metadata: [UInt8], payload: String?, recordedAt: Int64
    ) {
        self.seq = seq
        self.tx = tx
        self.stream = stream
        self.version = version
        self.type = type
        self.schemaVersion = schemaVersion
        self.data = data
        self.metadata = metadata
        self.payload = payload
        self.recordedAt = recordedAt
    }

    /// The checkpoint just after this event.
    public var checkpoint: Checkpoint { Checkpoint(tx: tx, seq: seq) }
}

/// The answer to an append.
public enum AppendResult: Sendable, Equatable {
    /// Stored, in append order, with seq/tx/version/recordedAt filled in.
    case appended([RecordedEvent])
    /// The idempotency key was seen before: nothing was written.
    case duplicate
    /// A stream's head was not the expected version: nothing was written. Roll back and
    /// retry the whole unit of work (re-read, re-decide, append again).
    case conflict(stream: String, expected: Int64, actual: Int64)
}

/// A catch-up position: everything at or before `(tx, seq)` has been handled.
public struct Checkpoint: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var tx: UInt64
    public var seq: Int64

    public init(tx: UInt64, seq: Int64) {
        self.tx = tx
        self.seq = seq
    }

    /// Before the first event.
    public static let start = Checkpoint(tx: 0, seq: 0)

    public static func < (lhs: Checkpoint, rhs: Checkpoint) -> Bool {
        (lhs.tx, lhs.seq) < (rhs.tx, rhs.seq)
    }

    public var description: String { "\(tx):\(seq)" }
}
