import EventStore
import JSON

extension LedgerService {
    /// A page of the change feed (api.md §4): up to `limit` changes after `cursor`, of `userId`
    /// only when given, oldest first. `onReplica`: a history read a replica may answer
    /// (ReadRouting; its xid horizon is as sound there, docs/operations.md).
    func changes(after cursor: FeedCursor, limit: Int, userId: String?, onReplica: Bool = false)
        throws(ServiceError) -> [StoredChange]
    {
        let page = { (connection: Connection) throws(ServiceError) -> Rows in
            try database { () throws(DatabaseError) in
                try connection.query(ChangeFeedTable.page(after: cursor, limit: limit, userId: userId))
            }
        }
        let rows = onReplica ? try historyRead(page) : try read(page)
        return ChangeFeedTable.decode(rows)
    }

    /// The newest change readers can see (`.start` on an empty feed).
    func changeFeedHead() throws(ServiceError) -> FeedCursor {
        let rows = try read { connection throws(ServiceError) -> Rows in
            try database { () throws(DatabaseError) in try connection.query(ChangeFeedTable.head) }
        }
        return ChangeFeedTable.cursor(fromHead: rows)
    }

    /// The feed page document: `{"changes": [...], "next": CURSOR}`; `next` is the last change's
    /// cursor, or `after` itself on an empty page (never null).
    static func changesPage(_ changes: [StoredChange], after: FeedCursor) -> [UInt8] {
        var w = JSONWriter(capacity: 256 + changes.reduce(0) { $0 + $1.customer.utf8.count + 512 })
        w.beginObject()
        w.key("changes")
        w.beginArray()
        for change in changes { change.write(to: &w) }
        w.endArray()
        w.key("next")
        w.string((changes.last?.cursor ?? after).description)
        w.endObject()
        return w.bytes
    }
}
