import EventStore
import JSON
import Ledger

/// The `proj.users` inline projection: each user's rendered Customer document, stored with
/// the instant until which it stays true, so most reads return stored bytes untouched.
struct UserDocuments: Sendable {
    let catalog: Catalog
    /// The recorded catalog version `catalog` is (0: none recorded): every write of a document
    /// checks it is still the one in force (`catalogCheck`, migration 0023).
    var catalogVersion: Int64 = 0

    /// Sent before any write of a rendered document, in the same transaction: fails (IC001)
    /// when a newer catalog version was recorded, so no document of an older one is stored.
    var catalogCheck: Connection.Statement { CatalogVersions.requireStatement(catalogVersion) }

    /// Renders the document of `world` at `now` and upserts it; returns the bytes.
    @discardableResult
    func store(_ world: LedgerRepository.UserWorld, now: Int64, on connection: Connection) throws(ServiceError)
        -> [UInt8]
    {
        let (document, validUntil) = render(world, at: now)
        do {
            _ = try connection.pipeline([
                catalogCheck,
                Connection.Statement(
                    Self.upsertOne,
                    [world.userId, String(world.lastSeq), String(decoding: document, as: UTF8.self), String(now),
                     validUntil.map(String.init)]),
            ])
        } catch {
            throw .database(error)
        }
        return document
    }

    /// Renders the documents of `worlds` at `now`: the upsert statement that stores them (nil for
    /// no world) and each user's bytes. One user, the usual case, is a plain VALUES row: its plan
    /// is cached, where unnest over bound arrays is planned anew on every execution.
    func upsert(_ worlds: [LedgerRepository.UserWorld], now: Int64) -> (statement: Connection.Statement?, documents: [String: [UInt8]]) {
        guard !worlds.isEmpty else { return (nil, [:]) }
        var documents: [String: [UInt8]] = [:]
        var ids: [String] = [], versions: [String] = [], texts: [String] = [], validUntils: [String?] = []
        for world in worlds {
            let (document, validUntil) = render(world, at: now)
            documents[world.userId] = document
            ids.append(world.userId)
            versions.append(String(world.lastSeq))
            texts.append(String(decoding: document, as: UTF8.self))
            validUntils.append(validUntil.map(String.init))
        }
        if worlds.count == 1 {
            return (Connection.Statement(Self.upsertOne, [ids[0], versions[0], texts[0], String(now), validUntils[0]]), documents)
        }
        return (Self.upsert(ids: ids, versions: versions, texts: texts, validUntils: validUntils, now: now), documents)
    }

    /// The several-rows upsert of documents already rendered (a catalog change's re-render too).
    static func upsert(ids: [String], versions: [String], texts: [String], validUntils: [String?], now: Int64)
        -> Connection.Statement
    {
        Connection.Statement(
            """
            INSERT INTO proj.users (user_id, version, document, rendered_at, valid_until, updated_at)
            SELECT u, v, d, $4, vu, now()
            FROM unnest($1::text[], $2::bigint[], $3::text[], $5::bigint[]) AS x(u, v, d, vu)
            ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, document = excluded.document,
                rendered_at = excluded.rendered_at, valid_until = excluded.valid_until, updated_at = now(),
                changed_tx = DEFAULT
            """,
            [PostgresArray.literal(ids), PostgresArray.literal(versions), PostgresArray.literal(texts), String(now),
             PostgresArray.literal(validUntils)])
    }

    private static let upsertOne = """
        INSERT INTO proj.users (user_id, version, document, rendered_at, valid_until, updated_at)
        VALUES ($1, $2, $3, $4, $5, now())
        ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, document = excluded.document,
            rendered_at = excluded.rendered_at, valid_until = excluded.valid_until, updated_at = now(),
            changed_tx = DEFAULT
        """

    /// The document as judged at `now`, and the instant until which it stays the same.
    func render(_ world: LedgerRepository.UserWorld, at now: Int64) -> (document: [UInt8], validUntil: Int64?) {
        let customer = CustomerView.build(
            userId: world.userId, account: world.account, chains: world.chains, catalog: catalog, at: now,
            version: world.lastSeq)
        let validUntil = CustomerView.nextChange(account: world.account, chains: world.chains, catalog: catalog, after: now)
        return (customer.jsonBytes(), validUntil)
    }

    /// A rendered document and the instants between which it is true (`validUntil` nil: until
    /// the next event).
    struct Judged: Sendable {
        var document: [UInt8]
        var validFrom: Int64
        var validUntil: Int64?
    }

    /// The stored document when it is still true at `now`; nil when absent or stale.
    func cached(userId: String, now: Int64, on connection: Connection) throws(ServiceError) -> Judged? {
        let rows: Rows
        do {
            rows = try connection.query(
                """
                SELECT document, rendered_at, valid_until FROM proj.users
                WHERE user_id = $1 AND rendered_at <= $2 AND (valid_until IS NULL OR valid_until > $2)
                """,
                [userId, String(now)])
        } catch {
            throw .database(error)
        }
        guard rows.count == 1, let text = rows[0, 0], let renderedAt = rows[0, 1].flatMap({ Int64($0) }) else {
            return nil
        }
        return Judged(document: Array(text.utf8), validFrom: renderedAt, validUntil: rows[0, 2].flatMap { Int64($0) })
    }
}
