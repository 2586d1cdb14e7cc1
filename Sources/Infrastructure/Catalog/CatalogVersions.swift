import AppStore
import EventStore
import Foundation
import JSON
import Ledger

/// One recorded version of the product catalog (docs/api.md §1.1).
public struct CatalogVersion: Sendable, Equatable {
    /// The version's position on the `catalog` stream, from 1; 0: nothing recorded yet.
    public var version: Int64
    public var catalog: Catalog
    /// SHA-256 (hex) of `catalog.canonicalJSON()`.
    public var hash: String
    /// The config file it came from, as the recording process resolved it.
    public var source: String?
    /// When it was recorded (ms); nil for version 0.
    public var recordedAt: Int64?

    package init(version: Int64, catalog: Catalog, hash: String, source: String?, recordedAt: Int64?) {
        self.version = version
        self.catalog = catalog
        self.hash = hash
        self.source = source
        self.recordedAt = recordedAt
    }

    /// Nothing recorded: the empty catalog (every product grants what its id names).
    public static let none = CatalogVersion(
        version: 0, catalog: Catalog(), hash: CatalogVersions.hash(Catalog()), source: nil, recordedAt: nil)

    /// `catalog show`'s JSON.
    public func jsonBytes() -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("version")
        w.int(version)
        w.key("hash")
        w.string(hash)
        w.key("source")
        w.stringOrNull(source)
        w.key("recordedAt")
        w.timestampOrNull(recordedAt)
        w.key("catalog")
        w.raw(catalog.canonicalJSON())
        w.endObject()
        return w.bytes
    }
}

/// The `catalog` stream of the event log: each event (`CatalogVersionRecorded`) carries one
/// catalog version's canonical JSON, its hash and its config file. It goes through `es.append`
/// like every event (append-only, expected-version checked), on a stream no user fold reads:
/// folds read `user:`/`chain:` streams by name, and the replay's log reader skips this stream.
public enum CatalogVersions {
    package static let stream = "catalog"
    package static let eventType = "CatalogVersionRecorded"
    /// Taken EXCLUSIVE by a recorder, SHARE by every write of `proj.users` (migration 0023).
    package static let lockKey = "iap-ledger:catalog"
    /// SQLSTATE raised by `es.require_catalog_version` when a newer version is in force.
    package static let staleVersionState = LedgerSQLState.staleCatalogVersion

    public static func hash(_ catalog: Catalog) -> String { Digest.sha256Hex(catalog.canonicalJSON()) }

    /// The version in force: the stream's head (0: nothing recorded). One primary-key lookup.
    package static func head(on connection: Connection) throws(DatabaseError) -> Int64 {
        try EventStore().streamVersion(stream, on: connection)
    }

    /// Every version after `after`, oldest first.
    package static func versions(after: Int64 = 0, on connection: Connection) throws(ServiceError) -> [CatalogVersion] {
        let rows = try database { () throws(DatabaseError) in
            try EventStore().readStream(stream, after: after, on: connection)
        }
        var versions: [CatalogVersion] = []
        for row in rows {
            let data: JSONValue
            do {
                data = try JSONValue.parse(row.data)
            } catch {
                throw .internalError("catalog version \(row.version) does not decode: \(error)")
            }
            let catalog: Catalog
            do {
                catalog = try Catalog(canonicalJSON: data["catalog"] ?? .null)
            } catch {
                throw .internalError("catalog version \(row.version): \(error)")
            }
            versions.append(
                CatalogVersion(
                    version: row.version, catalog: catalog, hash: data["hash"]?.stringValue ?? hash(catalog),
                    source: data["source"]?.stringValue, recordedAt: row.recordedAt))
        }
        return versions
    }

    /// The newest recorded version (`.none` when there is none).
    package static func newest(on connection: Connection) throws(ServiceError) -> CatalogVersion {
        try versions(on: connection).last ?? .none
    }

    /// The version in force at `instant` among `versions` (oldest first): the newest recorded at
    /// or before it. Before the first recording the first version stands (the catalog the data
    /// was served with before versions were recorded is not known; the first recorded is the
    /// closest knowledge), and with nothing recorded, `.none`.
    package static func inForce(at instant: Int64, among versions: [CatalogVersion]) -> CatalogVersion {
        versions.last { ($0.recordedAt ?? .min) <= instant } ?? versions.first ?? .none
    }

    /// Appends `catalog` as version `head + 1`. Call it holding the catalog lock (exclusive),
    /// first in its transaction (es.append's rule). A conflict means a recorder skipped the lock.
    package static func record(
        _ catalog: Catalog, source: String?, head: Int64, on connection: Connection
    ) throws(ServiceError) -> CatalogVersion {
        let canonical = catalog.canonicalJSON()
        let digest = Digest.sha256Hex(canonical)
        var w = JSONWriter(capacity: canonical.count + 256)
        w.beginObject()
        w.key("catalog")
        w.raw(canonical)
        w.key("hash")
        w.string(digest)
        w.key("source")
        w.stringOrNull(source)
        w.endObject()
        let result = try database { () throws(DatabaseError) in
            try EventStore().append(
                to: stream, expectedVersion: head == 0 ? .noStream : .exactly(head),
                events: [NewEvent(type: eventType, data: w.bytes)], on: connection)
        }
        guard case .appended(let recorded) = result, let event = recorded.first else {
            throw .conflict("the catalog stream moved while its lock was held")
        }
        return CatalogVersion(
            version: event.version, catalog: catalog, hash: digest, source: source, recordedAt: event.recordedAt)
    }

    /// Takes the recorders' lock for the rest of the transaction.
    package static func lockForRecording(on connection: Connection) throws(DatabaseError) {
        _ = try connection.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [lockKey])
    }

    /// The statement every write of `proj.users` sends before it (see migration 0023).
    package static func requireStatement(_ version: Int64) -> Connection.Statement {
        Connection.Statement("SELECT es.require_catalog_version($1::bigint)", [String(version)])
    }

    /// A config file path as recorded: absolute, so `catalog show` says which file on which host.
    package static func sourcePath(_ path: String?) -> String? {
        guard let path, !path.isEmpty else { return nil }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
