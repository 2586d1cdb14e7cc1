import EventStore
import JSON
import Ledger

/// The `proj.users` inline projection: each user's rendered Customer document, stored with
/// the instant until which it stays true, so most reads return stored bytes untouched.
package struct UserDocuments: Sendable {
    package let catalog: Catalog
    /// The recorded catalog version `catalog` is (0: none recorded): every write of a document
    /// checks it is still the one in force (`catalogCheck`, migration 0023).
    package var catalogVersion: Int64 = 0

    package init(catalog: Catalog, catalogVersion: Int64 = 0) {
        self.catalog = catalog
        self.catalogVersion = catalogVersion
    }

    /// Sent before any write of a rendered document, in the same transaction: fails (IC001)
    /// when a newer catalog version was recorded, so no document of an older one is stored, and
    /// (IC002) when the database's `users` projection is newer than this code (migration 0033).
    package var catalogCheck: Connection.Statement {
        ProjectionVersionWatch.requireStatement(catalogVersion: catalogVersion)
    }
    /// The version check alone, before a write of chain owners without documents.
    package var projectionCheck: Connection.Statement { ProjectionVersionWatch.requireStatement(catalogVersion: nil) }

    /// Renders the documents of `worlds` at `now`: the upsert statement that stores them (nil for
    /// no world) and each user's bytes (`UserDocumentsTable` writes one row and several apart).
    package func upsert(_ worlds: [LedgerRepository.UserWorld], now: Int64) -> (
        statement: Connection.Statement?, documents: [String: [UInt8]]
    ) {
        guard !worlds.isEmpty else { return (nil, [:]) }
        var documents: [String: [UInt8]] = [:]
        var ids: [String] = []
        var versions: [Int64] = []
        var texts: [String] = []
        var validUntils: [Int64?] = []
        for world in worlds {
            let (document, validUntil) = render(world, at: now)
            documents[world.userId] = document
            ids.append(world.userId)
            versions.append(world.lastSeq)
            texts.append(String(decoding: document, as: UTF8.self))
            validUntils.append(validUntil)
        }
        if worlds.count == 1 {
            let one = UserDocumentsTable.upsert(
                userId: ids[0], version: versions[0], document: texts[0], renderedAt: now, validUntil: validUntils[0])
            return (one.statement, documents)
        }
        let all = UserDocumentsTable.upsert(
            ids: ids, versions: versions, documents: texts, validUntils: validUntils, renderedAt: now)
        return (all.statement, documents)
    }

    /// The document as judged at `now`, and the instant until which it stays the same.
    package func render(_ world: LedgerRepository.UserWorld, at now: Int64) -> (document: [UInt8], validUntil: Int64?) {
        let customer = CustomerView.build(
            userId: world.userId, account: world.account, chains: world.chains, catalog: catalog, at: now,
            version: world.lastSeq)
        let validUntil = CustomerView.nextChange(
            account: world.account, chains: world.chains, catalog: catalog, after: now)
        return (customer.jsonBytes(), validUntil)
    }

    /// A rendered document and the instants between which it is true (`validUntil` nil: until
    /// the next event).
    package struct Judged: Sendable {
        package var document: [UInt8]
        package var validFrom: Int64
        package var validUntil: Int64?

        package init(document: [UInt8], validFrom: Int64, validUntil: Int64?) {
            self.document = document
            self.validFrom = validFrom
            self.validUntil = validUntil
        }
    }

    /// The stored document when it is still true at `now`; nil when absent or stale.
    package func cached(userId: String, now: Int64, on connection: Connection) throws(ServiceError) -> Judged? {
        let rows: Rows
        do {
            rows = try connection.query(UserDocumentsTable.cached(userId: userId, now: now))
        } catch {
            throw .database(error)
        }
        guard rows.count == 1, let text = rows[0, 0], let renderedAt = rows[0, 1].flatMap({ Int64($0) }) else {
            return nil
        }
        return Judged(document: Array(text.utf8), validFrom: renderedAt, validUntil: rows[0, 2].flatMap { Int64($0) })
    }
}
