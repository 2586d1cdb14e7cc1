import AppStore
import EventStore
import Foundation
import Infrastructure

/// The one-time log migration `iap-ledger migrate` runs after the schema's migrations
/// (docs/architecture.md, "Events already written"): events, changes and webhook deliveries
/// written before users were named by subject (0047) and tokens by token subject (0049) are
/// stored again as new writes are, so that an erasure can reach everyone. `LogSealing` decides
/// each row; this is its shell.
///
/// It runs as the schema owner in one transaction that holds every table it touches
/// exclusively: instances keep running and wait for it (they hold no subject across
/// transactions), and whatever it rewrites commits together or not at all. The log and the
/// feed refuse UPDATE for every role; their owner turns that off for this transaction alone.
/// Afterwards `VACUUM FULL` rewrites the tables, so the old rows' bytes leave the files.
/// `identity.log_sealing` (migration 0051) records that it ran; a database created at 0051 or
/// later is born with that row.
package enum LogMigration {
    package struct Outcome: Equatable {

        package init() {}
        package var events = 0
        package var changes = 0
        package var users = 0
        package var tokens = 0
    }

    /// Seals what needs it; nil when the log was sealed already. A transaction of a running
    /// instance that holds one of the tables while waiting for another can deadlock with the
    /// locks taken here; PostgreSQL then ends one of the two, and when it is this one, it runs
    /// again (nothing of it committed).
    package static func run(on connection: Connection, batch: Int = 2_000) throws -> Outcome? {
        for attempt in 1... {
            do {
                return try runOnce(on: connection, batch: batch)
            } catch let error as DatabaseError where error.sqlState == "40P01" && attempt < 5 {
                continue
            }
        }
        return nil
    }

    private static func runOnce(on connection: Connection, batch: Int) throws -> Outcome? {
        guard try connection.query("SELECT 1 FROM identity.log_sealing").count == 0 else { return nil }
        let outcome = try connection.transaction { connection in
            _ = try connection.execute(
                """
                LOCK TABLE es.events, es.streams, es.inbox, changes.feed, identity.subjects, identity.tokens,
                    webhooks.deliveries, analytics.balance_movements, identity.log_sealing IN ACCESS EXCLUSIVE MODE
                """)
            guard try connection.query("SELECT 1 FROM identity.log_sealing").count == 0 else { return Outcome?.none }
            var subjects = SubjectsTable.subjects(from: try connection.query(SubjectsTable.all.sql))
            for token in SubjectsTable.tokens(from: try connection.query(SubjectsTable.allTokens.sql)) {
                subjects.insert(token)
            }
            var plan = LogSealing(subjects: subjects)
            var outcome = Outcome()
            try setTriggers(enabled: false, on: connection)
            outcome.events = try rewriteEvents(&plan, batch: batch, on: connection)
            outcome.changes = try rewriteChanges(plan, batch: batch, on: connection)
            let renamed = plan.renamed.sorted { $0.key < $1.key }
            let old = renamed.map(\.key)
            let streams = renamed.map(\.value.stream)
            let fresh = renamed.map(\.value.subject)
            for query: Query in [
                """
                UPDATE es.streams s SET stream_id = m.to_id FROM unnest(\(array: old.map { "user:" + $0 })::text[],
                    \(array: streams)::text[]) AS m(from_id, to_id) WHERE s.stream_id = m.from_id
                """,
                """
                UPDATE es.inbox i SET stream_id = m.to_id FROM unnest(\(array: old.map { "user:" + $0 })::text[],
                    \(array: streams)::text[]) AS m(from_id, to_id) WHERE i.stream_id = m.from_id
                """,
                """
                UPDATE identity.subjects s SET subject = m.subject, key = decode(m.key, 'hex')
                FROM unnest(\(array: old)::text[], \(array: fresh)::text[],
                    \(array: renamed.map { Hex.encode($0.value.key ?? []) })::text[]) AS m(user_id, subject, key)
                WHERE s.user_id = m.user_id
                """,
                """
                UPDATE webhooks.deliveries d SET user_id = m.subject
                FROM unnest(\(array: old)::text[], \(array: fresh)::text[]) AS m(user_id, subject)
                WHERE d.user_id = m.user_id
                """,
                SubjectsTable.save([], tokens: plan.mintedTokens),
                // The log seals a debit's key and reason now: SQL can no longer read them there.
                """
                UPDATE analytics.balance_movements SET idempotency_key = NULL, reason = NULL
                WHERE idempotency_key IS NOT NULL OR reason IS NOT NULL
                """,
            ] {
                _ = try connection.query(query.sql, query.params)
            }
            try setTriggers(enabled: true, on: connection)
            outcome.users = renamed.count
            outcome.tokens = plan.mintedTokens.count
            let record: Query = """
                INSERT INTO identity.log_sealing (events_rewritten, changes_rewritten, users, tokens)
                VALUES (\(outcome.events), \(outcome.changes), \(outcome.users), \(outcome.tokens))
                """
            _ = try connection.query(record.sql, record.params)
            return outcome
        }
        guard let outcome else { return nil }
        if outcome != Outcome() {
            try connection.executeScript(
                "VACUUM FULL es.events, es.streams, es.inbox, changes.feed, identity.subjects, webhooks.deliveries")
        }
        return outcome
    }

    /// The log and the feed refuse every UPDATE (their statement triggers, SQLSTATE ES002); the
    /// owner lifts that inside this transaction only, and puts it back before it commits.
    private static func setTriggers(enabled: Bool, on connection: Connection) throws {
        let verb = enabled ? "ENABLE" : "DISABLE"
        try connection.executeScript(
            """
            ALTER TABLE es.events \(verb) TRIGGER events_append_only;
            ALTER TABLE es.inbox \(verb) TRIGGER inbox_append_only;
            ALTER TABLE changes.feed \(verb) TRIGGER feed_append_only;
            """)
    }

    private static func rewriteEvents(_ plan: inout LogSealing, batch: Int, on connection: Connection) throws -> Int {
        var after: Int64 = 0
        var rewritten = 0
        while true {
            let page: Query = """
                SELECT seq, stream_id, type, schema_version, data::text, payload FROM es.events
                WHERE seq > \(after) ORDER BY seq LIMIT \(batch)
                """
            let rows = try connection.query(page.sql, page.params)
            guard rows.count > 0 else { return rewritten }
            var updates: [LogSealing.StoredEvent] = []
            for row in 0..<rows.count {
                guard let seq = rows[row, 0].flatMap({ Int64($0) }), let stream = rows[row, 1], let type = rows[row, 2],
                    let version = rows[row, 3].flatMap({ Int($0) }), let data = rows[row, 4]
                else { throw ServiceError.internalError("an event of es.events has a NULL column") }
                after = seq
                let stored = LogSealing.StoredEvent(
                    seq: seq, stream: stream, type: type, schemaVersion: version, data: Array(data.utf8),
                    payload: rows[row, 5])
                if let update = try plan.rewrite(stored) { updates.append(update) }
            }
            guard !updates.isEmpty else { continue }
            let update: Query = """
                UPDATE es.events e SET stream_id = m.stream, schema_version = m.version, data = m.data::jsonb,
                    payload = m.payload
                FROM unnest(\(array: updates.map(\.seq))::bigint[], \(array: updates.map(\.stream))::text[],
                    \(array: updates.map(\.schemaVersion))::smallint[],
                    \(array: updates.map { String(decoding: $0.data, as: UTF8.self) })::text[],
                    \(array: updates.map(\.payload))::text[]) AS m(seq, stream, version, data, payload)
                WHERE e.seq = m.seq
                """
            _ = try connection.query(update.sql, update.params)
            rewritten += updates.count
        }
    }

    private static func rewriteChanges(_ plan: LogSealing, batch: Int, on connection: Connection) throws -> Int {
        var after: Int64 = 0
        var rewritten = 0
        while true {
            let page: Query = """
                SELECT seq, type, user_id, details, customer FROM changes.feed
                WHERE seq > \(after) ORDER BY seq LIMIT \(batch)
                """
            let rows = try connection.query(page.sql, page.params)
            guard rows.count > 0 else { return rewritten }
            var updates: [LogSealing.StoredChange] = []
            for row in 0..<rows.count {
                guard let seq = rows[row, 0].flatMap({ Int64($0) }), let type = rows[row, 1],
                    let details = rows[row, 3], let customer = rows[row, 4]
                else { throw ServiceError.internalError("a change of changes.feed has a NULL column") }
                after = seq
                let stored = LogSealing.StoredChange(
                    seq: seq, type: type, userId: rows[row, 2], details: details, customer: customer)
                if let update = try plan.rewrite(stored) { updates.append(update) }
            }
            guard !updates.isEmpty else { continue }
            let update: Query = """
                UPDATE changes.feed f SET user_id = m.user_id, details = m.details, customer = m.customer
                FROM unnest(\(array: updates.map(\.seq))::bigint[], \(array: updates.map(\.userId))::text[],
                    \(array: updates.map(\.details))::text[], \(array: updates.map(\.customer))::text[])
                    AS m(seq, user_id, details, customer)
                WHERE f.seq = m.seq
                """
            _ = try connection.query(update.sql, update.params)
            rewritten += updates.count
        }
    }
}
