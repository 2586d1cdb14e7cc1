import EventStore
import Ledger

/// Writes a user's document together with the changes it announces: every write of a
/// document goes through here, so the feed never misses what a stored document says.
package enum UserDocumentWriter {
    /// Stores the document of `after` rendered at `now` together with the changes it announces:
    /// what time changed since the stored one was rendered, then what `events` changed from
    /// `before` (nil: the same facts as `after`). The caller holds the user's stream lock, so
    /// the stored document read here is the one the feed has announced. Returns the document
    /// and the changes, to count once the transaction commits (`changeTally`).
    @discardableResult
    package static func storeAnnouncing(
        _ after: LedgerRepository.UserWorld, before: LedgerRepository.UserWorld? = nil, events: [LedgerEvent] = [],
        documents: UserDocuments, now: Int64, on connection: Connection
    ) throws(ServiceError) -> (document: [UInt8], changes: [NewChange]) {
        let rows: Rows
        do {
            rows = try connection.query(UserDocumentsTable.renderedAt(of: [after.userId]))
        } catch {
            throw .database(error)
        }
        let old = before ?? after
        let announcedAt = UserDocumentsTable.renderedAt(from: rows)[after.userId]
        let input = ChangeInput(
            userId: after.userId,
            before: ChangeDetector.Facts(account: old.account, chains: old.chains, version: old.lastSeq),
            announcedAt: announcedAt)
        // Never before what the feed announced (another instance's clock may run a little ahead).
        let now = max(now, announcedAt ?? now)
        let (document, validUntil) = documents.render(after, at: now)
        let changes = ChangeWriter(catalog: documents.catalog).changes(
            input, after: after, events: events, now: now, rendered: document)
        var statements = [
            documents.catalogCheck,
            UserDocumentsTable.upsert(
                userId: after.userId, version: after.lastSeq, document: String(decoding: document, as: UTF8.self),
                renderedAt: now, validUntil: validUntil
            ).statement,
        ]
        // The feed stores the changes sealed, by subject: one more indexed read per write that
        // emits changes (issue 39 weighs reading them with the write's first round trip).
        if !changes.isEmpty {
            let rows = try ChangeSealing.rows(
                changes, subjects: ChangeSealing.subjects(for: changes, on: connection))
            if let insert = ChangeFeedTable.insert(rows, recordedAt: now) { statements.append(insert.statement) }
        }
        do {
            _ = try connection.pipeline(statements)
        } catch {
            throw .database(error)
        }
        return (document, changes)
    }
}
