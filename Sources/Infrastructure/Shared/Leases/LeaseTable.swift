import EventStore

/// The one owner of `ops.leases`' SQL (migration 0032). Every statement is one autocommit
/// statement on the database's clock, so it works the same direct and through PgBouncer in
/// transaction pooling, and instances with skewed clocks agree on who holds what.
package enum LeaseTable {
    /// What the table answered a holder that asked for a lease.
    package struct Granted: Sendable, Equatable {
        /// The fencing token: the same while this holder keeps the lease, a bigger one each
        /// time it changes hands.
        package var token: Int64
        /// When this holder took it (database clock, ms since the epoch).
        package var acquiredAt: Int64
        package var expiresAt: Int64
    }

    /// One row, as `GET /v1/admin/projections` shows it.
    package struct Row: Sendable, Equatable {
        package var name: String
        package var holder: String
        package var claim: String
        package var token: Int64
        package var acquiredAt: Int64
        package var renewedAt: Int64
        package var expiresAt: Int64
        /// expires_at is still ahead on the database's clock.
        package var live: Bool
    }

    /// Acquire-or-renew in one statement: takes lease `name` for `ttlMillis` if it is free (no
    /// row, or expired) or already `claim`'s, and answers the grant; no row when another holder
    /// has it. A change of claim draws a new token; a renewal keeps it. Under concurrency the
    /// row lock of ON CONFLICT DO UPDATE serializes the askers, and the WHERE is evaluated again
    /// on the latest row, so only one of two takes an expired lease.
    package static func acquire(name: String, holder: String, claim: String, ttlMillis: Int64) -> Query {
        """
        INSERT INTO ops.leases AS l (name, holder, claim, token, acquired_at, renewed_at, expires_at)
        VALUES (\(name), \(holder), \(claim), nextval('ops.lease_tokens'), now(), now(),
            now() + \(ttlMillis)::bigint * interval '1 millisecond')
        ON CONFLICT (name) DO UPDATE SET
            token = CASE WHEN l.claim = excluded.claim THEN l.token ELSE excluded.token END,
            acquired_at = CASE WHEN l.claim = excluded.claim THEN l.acquired_at ELSE now() END,
            holder = excluded.holder, claim = excluded.claim, renewed_at = now(), expires_at = excluded.expires_at
        WHERE l.claim = excluded.claim OR l.expires_at <= now()
        RETURNING l.token, (extract(epoch FROM l.acquired_at) * 1000)::bigint AS acquired_at,
            (extract(epoch FROM l.expires_at) * 1000)::bigint AS expires_at
        """
    }

    package static func grant(from rows: Rows) -> Granted? {
        guard rows.count == 1, let token = rows.int64(0, "token"), let acquiredAt = rows.int64(0, "acquired_at"),
            let expiresAt = rows.int64(0, "expires_at")
        else { return nil }
        return Granted(token: token, acquiredAt: acquiredAt, expiresAt: expiresAt)
    }

    /// Gives the lease up (a graceful stop): the next instance that asks takes it at once.
    package static func release(name: String, claim: String) -> Query {
        "DELETE FROM ops.leases WHERE name = \(name) AND claim = \(claim)"
    }

    /// Every lease, by name.
    package static let all: Query = """
        SELECT name, holder, claim, token, (extract(epoch FROM acquired_at) * 1000)::bigint AS acquired_at,
            (extract(epoch FROM renewed_at) * 1000)::bigint AS renewed_at,
            (extract(epoch FROM expires_at) * 1000)::bigint AS expires_at,
            expires_at > now() AS live
        FROM ops.leases ORDER BY name
        """

    package static func decode(_ rows: Rows) -> [Row] {
        (0..<rows.count).compactMap { row in
            guard let name = rows[row, "name"], let holder = rows[row, "holder"], let claim = rows[row, "claim"],
                let token = rows.int64(row, "token"), let acquiredAt = rows.int64(row, "acquired_at"),
                let renewedAt = rows.int64(row, "renewed_at"), let expiresAt = rows.int64(row, "expires_at")
            else { return nil }
            return Row(
                name: name, holder: holder, claim: claim, token: token, acquiredAt: acquiredAt, renewedAt: renewedAt,
                expiresAt: expiresAt, live: rows.bool(row, "live") ?? false)
        }
    }

    /// The fencing check, for the first statement of a job's write transaction: the transaction
    /// fails with `fencedOutState` unless `claim` still holds `name` with `token`, and the
    /// lease cannot change hands until it ends (migration 0032, ops.require_lease).
    package static func require(name: String, claim: String, token: Int64) -> Query {
        "SELECT ops.require_lease(\(name), \(claim), \(token)::bigint)"
    }

    package static let fencedOutState = "LE001"
}
