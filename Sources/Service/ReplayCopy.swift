import EventStore
import Foundation
import JSON
import Ledger
import Synchronization

/// One batch fetched on a helper thread (the connection is used by that thread alone until `wait`).
final class Prefetch: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<[UInt8], ServiceError> = .success([])

    init(reader: ReplayLogReader, after checkpoint: Checkpoint, horizon: Bool) {
        let thread = Thread { [self] in
            do throws(ServiceError) {
                result = .success(try reader.fetch(after: checkpoint, horizon: horizon))
            } catch {
                result = .failure(error)
            }
            done.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    func wait() throws(ServiceError) -> [UInt8] {
        done.wait()
        return try result.get()
    }
}

extension PostgresArray {
    /// `{1,2,NULL}` for `$n::bigint[]` parameters.
    static func numbers(_ items: [String?]) -> String {
        "{" + items.map { $0 ?? "NULL" }.joined(separator: ",") + "}"
    }
}

/// COPY text format helpers (rows out, rows in).
enum CopyText {
    /// Splits COPY text output into rows of unescaped fields.
    static func rows(_ bytes: [UInt8]) -> [[[UInt8]]] {
        var rows: [[[UInt8]]] = []
        var row: [[UInt8]] = []
        var start = 0
        bytes.withUnsafeBufferPointer { buffer in
            for i in 0..<buffer.count where buffer[i] == 0x09 || buffer[i] == 0x0A {
                let field = UnsafeBufferPointer(rebasing: buffer[start..<i])
                row.append(field.contains(0x5C) ? ReplayLogReader.unescape(field) : Array(field))
                start = i + 1
                if buffer[i] == 0x0A {
                    rows.append(row)
                    row = []
                }
            }
        }
        return rows
    }

    static func integer(_ bytes: [UInt8]) -> Int64 {
        Int64(String(decoding: bytes, as: UTF8.self)) ?? 0
    }

    static func appendUserRow(
        userId: String, version: Int64, document: [UInt8], renderedAt: Int64, validUntil: Int64?,
        into out: inout [UInt8]
    ) {
        ReplayLogReader.escape(userId, into: &out)
        out.append(0x09)
        out.append(contentsOf: String(version).utf8)
        out.append(0x09)
        ReplayLogReader.escape(bytes: document, into: &out)
        out.append(0x09)
        out.append(contentsOf: String(renderedAt).utf8)
        out.append(0x09)
        if let validUntil { out.append(contentsOf: String(validUntil).utf8) } else { out.append(contentsOf: "\\N".utf8) }
        out.append(0x0A)
    }

    static func appendOwnerRow(otid: String, userId: String, claimedAt: Int64, into out: inout [UInt8]) {
        ReplayLogReader.escape(otid, into: &out)
        out.append(0x09)
        ReplayLogReader.escape(userId, into: &out)
        out.append(0x09)
        out.append(contentsOf: RFC3339.format(claimedAt).utf8)
        out.append(0x0A)
    }
}
