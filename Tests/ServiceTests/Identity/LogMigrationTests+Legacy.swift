import AppStore
import EventStore
import Foundation
import JSON
import Ledger

@testable import Identity
@testable import Infrastructure
@testable import Service

/// A database as iap-ledger left it before migrations 0047 and 0049 (users by id, tokens and
/// signed payloads in clear, the feed in clear) — made from one written by today's code by
/// opening everything again, as the test's superuser with the tables' triggers off. Every
/// event is stored as the older code stored it: `event.encode()` of the domain's event, on
/// `event.stream`, schema version 1.
enum LegacyLog {
    static func rewriteAsBeforeSubjects(_ conninfo: String) throws {
        let admin = try Connection(conninfo)
        var subjects = SubjectsTable.subjects(from: try admin.query(SubjectsTable.all.sql))
        let tokens = SubjectsTable.tokens(from: try admin.query(SubjectsTable.allTokens.sql))
        for token in tokens { subjects.insert(token) }
        try admin.executeScript(
            """
            BEGIN;
            ALTER TABLE es.events DISABLE TRIGGER USER;
            ALTER TABLE es.inbox DISABLE TRIGGER USER;
            ALTER TABLE changes.feed DISABLE TRIGGER USER;
            """)
        let events = try admin.query("SELECT seq, stream_id, type, schema_version, data::text, payload FROM es.events")
        for row in 0..<events.count {
            let stored = LogSealing.StoredEvent(
                seq: Int64(events[row, 0] ?? "") ?? 0, stream: events[row, 1] ?? "", type: events[row, 2] ?? "",
                schemaVersion: Int(events[row, 3] ?? "") ?? 0, data: Array((events[row, 4] ?? "").utf8),
                payload: events[row, 5])
            guard LedgerEvent.typeNames.contains(stored.type) else { continue }
            var event = try opened(stored, subjects: subjects)
            event = subjects.restoringTokens(SubjectCodec.restoringUserIds(event, subjects: subjects))
            var payload = stored.payload
            if let sealed = payload, sealed.hasPrefix(SubjectCodec.sealedPayloadPrefix) {
                payload = try openPayload(sealed, type: stored.type, stream: stored.stream, tokens: tokens)
            }
            _ = try admin.query(
                "UPDATE es.events SET stream_id = $2, schema_version = 1, data = $3::jsonb, payload = $4 WHERE seq = $1",
                [String(stored.seq), event.stream, String(decoding: event.encode(), as: UTF8.self), payload])
        }
        let changes = try admin.query("SELECT seq, type, user_id, details, customer FROM changes.feed")
        for row in 0..<changes.count {
            guard let subject = changes[row, 2], let owner = subjects.bySubject[subject], let key = owner.key,
                let open = ChangeSealing.opened(
                    details: changes[row, 3] ?? "", customer: changes[row, 4] ?? "", subject: subject, key: key)
            else { continue }
            let rename = { (subject: String) -> String in subjects.bySubject[subject]?.userId ?? subject }
            _ = try admin.query(
                "UPDATE changes.feed SET user_id = $2, details = $3, customer = $4 WHERE seq = $1",
                [
                    changes[row, 0], owner.userId,
                    ChangeSealing.renamingTransferSides(open.details, type: changes[row, 1] ?? "", rename),
                    CustomerText.mappingSameAppleAccountAs(open.customer, rename),
                ])
        }
        try admin.executeScript(
            """
            UPDATE es.streams s SET stream_id = 'user:' || i.user_id FROM identity.subjects i
                WHERE s.stream_id = 'user:' || i.subject;
            UPDATE es.inbox s SET stream_id = 'user:' || i.user_id FROM identity.subjects i
                WHERE s.stream_id = 'user:' || i.subject;
            UPDATE webhooks.deliveries d SET user_id = i.user_id FROM identity.subjects i WHERE d.user_id = i.subject;
            UPDATE identity.subjects SET subject = user_id, key = NULL;
            DELETE FROM identity.tokens;
            DELETE FROM identity.log_sealing;
            ALTER TABLE es.events ENABLE TRIGGER USER;
            ALTER TABLE es.inbox ENABLE TRIGGER USER;
            ALTER TABLE changes.feed ENABLE TRIGGER USER;
            COMMIT;
            """)
    }

    private static func opened(_ stored: LogSealing.StoredEvent, subjects: Subjects) throws -> LedgerEvent {
        guard stored.stream.hasPrefix(LedgerRoute.userPrefix) else {
            return try LedgerEvent.decode(type: stored.type, schemaVersion: stored.schemaVersion, data: stored.data)
        }
        guard let event = try LogSealing.opened(stored, subjects: subjects) else {
            throw LegacyFailure(description: "event \(stored.seq) does not open")
        }
        return event
    }

    /// A sealed payload in clear again: it was sealed with the key of the token it carries.
    private static func openPayload(_ sealed: String, type: String, stream: String, tokens: [TokenSubject]) throws
        -> String
    {
        let text = String(sealed.dropFirst(SubjectCodec.sealedPayloadPrefix.count))
        for token in tokens {
            if let bytes = try? Sealing.openText(
                text, key: token.key, associatedData: Array(type.utf8) + [0x0A] + Array(stream.utf8))
            {
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        throw LegacyFailure(description: "a \(type) payload of \(stream) opens with no token's key")
    }

    struct LegacyFailure: Error, CustomStringConvertible { var description: String }
}
