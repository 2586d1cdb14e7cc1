import EventStore
import Infrastructure
import JSON

/// The change feed's reads (api.md §4): a page, the head, and the page document.
package struct ChangeFeedReads: Sendable {
    package let ledger: LedgerService

    package init(ledger: LedgerService) {
        self.ledger = ledger
    }

    /// A page of the change feed (api.md §4): up to `limit` changes after `cursor`, of `userId`
    /// only when given, oldest first, opened (ChangeSealing); `next` passes rows not served (an
    /// erased person's). `onReplica`: a history read a replica may answer (ReadRouting; its xid
    /// horizon is as sound there, docs/operations.md).
    package func changes(after cursor: FeedCursor, limit: Int, userId: String?, onReplica: Bool = false)
        throws(ServiceError) -> FeedPage
    {
        let page = { (connection: Connection) throws(ServiceError) -> FeedPage in
            let rows = try database { () throws(DatabaseError) in
                try connection.query(ChangeFeedTable.page(after: cursor, limit: limit, userId: userId))
            }
            return try ChangeFeedTable.opened(rows, on: connection)
        }
        return onReplica ? try ledger.historyRead(page) : try ledger.read(page)
    }

    /// The newest change readers can see (`.start` on an empty feed).
    package func changeFeedHead() throws(ServiceError) -> FeedCursor {
        let rows = try ledger.read { connection throws(ServiceError) -> Rows in
            try database { () throws(DatabaseError) in try connection.query(ChangeFeedTable.head) }
        }
        return ChangeFeedTable.cursor(fromHead: rows)
    }

    /// The feed page document: `{"changes": [...], "next": CURSOR}`; `next` is the last row
    /// read's cursor (served or not), or `after` itself on an empty page (never null).
    package static func changesPage(_ page: FeedPage, after: FeedCursor) -> [UInt8] {
        changesPage(page.changes, next: page.next ?? after)
    }

    package static func changesPage(_ changes: [StoredChange], next: FeedCursor) -> [UInt8] {
        var w = JSONWriter(capacity: 256 + changes.reduce(0) { $0 + $1.customer.utf8.count + 512 })
        w.beginObject()
        w.key("changes")
        w.beginArray()
        for change in changes { change.write(to: &w) }
        w.endArray()
        w.key("next")
        w.string(next.description)
        w.endObject()
        return w.bytes
    }
}
