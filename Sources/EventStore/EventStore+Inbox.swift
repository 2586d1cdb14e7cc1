extension EventStore {
    /// Whether an append with `key` was recorded: `es.inbox` keeps one row per key ever appended
    /// (written by `es.append` in the same transaction as the events), so this is the log's own
    /// answer to "did this external fact reach us?", never a projection's.
    public func wasRecorded(_ key: IdempotencyKey, on connection: Connection) throws(DatabaseError) -> Bool {
        let rows = try connection.query(
            "SELECT 1 FROM es.inbox WHERE source = $1 AND external_id = $2", [key.source, key.externalId])
        return !rows.isEmpty
    }
}
