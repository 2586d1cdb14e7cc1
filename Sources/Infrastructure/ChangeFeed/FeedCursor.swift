/// A position in the change feed: the (transaction id, seq) pair readers order by (the log's
/// xid horizon, eventstore.md §1). Spelled `<tx>-<seq>`: opaque to clients, stable across
/// restarts, instances and replays, and it only grows along the feed.
package struct FeedCursor: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var tx: UInt64
    package var seq: Int64

    /// Before every change.
    package static let start = FeedCursor(tx: 0, seq: 0)

    package init(tx: UInt64, seq: Int64) {
        self.tx = tx
        self.seq = seq
    }

    /// Parses `<tx>-<seq>`; nil for anything else (the API answers 400 `invalid_cursor`).
    package init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }),
            let tx = UInt64(parts[0]), let seq = Int64(parts[1])
        else { return nil }
        self.init(tx: tx, seq: seq)
    }

    package var description: String { "\(tx)-\(seq)" }

    package static func < (a: FeedCursor, b: FeedCursor) -> Bool { (a.tx, a.seq) < (b.tx, b.seq) }
}
