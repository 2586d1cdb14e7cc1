import EventStore
import Foundation

/// A position in PostgreSQL's write-ahead log (`pg_lsn`), as the byte offset it names.
package struct WALPosition: Sendable, Comparable, CustomStringConvertible {
    package var offset: UInt64

    package init(offset: UInt64) { self.offset = offset }

    /// Parses PostgreSQL's spelling, `16/B374D848` (high and low 32 bits in hex); nil otherwise.
    package init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let high = UInt32(parts[0], radix: 16), let low = UInt32(parts[1], radix: 16) else {
            return nil
        }
        offset = UInt64(high) << 32 | UInt64(low)
    }

    package var description: String {
        String(offset >> 32, radix: 16, uppercase: true) + "/"
            + String(offset & 0xFFFF_FFFF, radix: 16, uppercase: true)
    }

    package static func < (a: WALPosition, b: WALPosition) -> Bool { a.offset < b.offset }
}

/// The page geometry of a cluster's WAL, read once: what `pg_current_wal_insert_lsn()` and
/// `pg_last_wal_replay_lsn()` mean at a page boundary differs by a page header.
package struct WALLayout: Sendable {
    package var blockSize: UInt64
    package var segmentSize: UInt64

    /// PostgreSQL's page headers (MAXALIGNed `XLogPageHeaderData` / `XLogLongPageHeaderData`).
    package static let shortHeader: UInt64 = 24
    package static let longHeader: UInt64 = 40

    package static func read(on connection: Connection) throws(DatabaseError) -> WALLayout {
        let rows = try connection.query(
            "SELECT name, setting FROM pg_settings WHERE name IN ('wal_block_size', 'wal_segment_size')")
        var settings: [String: UInt64] = [:]
        for row in 0..<rows.count {
            if let name = rows[row, 0], let value = rows[row, 1].flatMap({ UInt64($0) }) { settings[name] = value }
        }
        return WALLayout(
            blockSize: settings["wal_block_size"] ?? 8192, segmentSize: settings["wal_segment_size"] ?? 16 << 20)
    }

    /// The insert position as the end of the record before it. At a page boundary PostgreSQL
    /// answers the insert position *after* the new page's header, while a replica that replayed
    /// the record ending at that boundary reports the boundary itself; no record can end inside
    /// a page header, so stepping back over it loses nothing and spares an idle primary's readers
    /// a wait for a record that may never come.
    package func recordEnd(ofInsertPosition position: WALPosition) -> WALPosition {
        let offset = position.offset
        if offset % segmentSize == Self.longHeader { return WALPosition(offset: offset - Self.longHeader) }
        if offset % blockSize == Self.shortHeader { return WALPosition(offset: offset - Self.shortHeader) }
        return position
    }
}

/// The primary's WAL insert position for replica reads, one fetch shared by every reader that
/// arrived before it started (a read needs a position taken *after* it began: then every write
/// acknowledged before the read is at or below it). Under load that is one trivial query for
/// many reads; a reader waits at most for the fetch in flight and the next one.
///
/// Why the insert position and not `pg_current_wal_lsn()` (the write position): with
/// `synchronous_commit = off` a commit is acknowledged once its record is inserted, before it
/// is written, so only the insert position is sure to cover it.
package final class PrimaryWALPosition: @unchecked Sendable {
    private let fetch: @Sendable () throws(DatabaseError) -> WALPosition
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var started = 0
    private var completed = 0
    private var running = false
    private var latest: Result<WALPosition, DatabaseError>?

    package init(fetch: @escaping @Sendable () throws(DatabaseError) -> WALPosition) {
        self.fetch = fetch
    }

    /// Reads the primary's position with `pool` (normalized by `layout`).
    package convenience init(pool: ConnectionPool, layout: WALLayout) {
        self.init { () throws(DatabaseError) -> WALPosition in
            do {
                return try pool.withConnection { connection in
                    let rows = try connection.query("SELECT pg_current_wal_insert_lsn()::text")
                    guard rows.count == 1, let text = rows[0, 0], let position = WALPosition(text) else {
                        throw DatabaseError(
                            sqlState: "XX000", message: "pg_current_wal_insert_lsn() answered no position")
                    }
                    return layout.recordEnd(ofInsertPosition: position)
                }
            } catch let error as DatabaseError {
                throw error
            } catch {
                throw DatabaseError(sqlState: "XX000", message: "\(error)")
            }
        }
    }

    /// A position taken after this call began.
    package func current() throws(DatabaseError) -> WALPosition {
        condition.lock()
        // Fetches are numbered in start order; the one in flight (if any) started before us.
        let needed = started + 1
        while completed < needed {
            if running {
                condition.wait()
                continue
            }
            running = true
            started += 1
            let number = started
            condition.unlock()
            let result: Result<WALPosition, DatabaseError>
            do { result = .success(try fetch()) } catch { result = .failure(error) }
            condition.lock()
            running = false
            completed = number
            latest = result
            condition.broadcast()
        }
        let result = latest!
        condition.unlock()
        return try result.get()
    }
}
