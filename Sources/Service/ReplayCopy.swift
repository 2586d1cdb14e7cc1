import EventStore
import Foundation
import JSON
import Ledger
import Synchronization

/// One batch fetched on a helper thread (the connection is used by that thread alone until `wait`),
/// into the storage of a buffer handed over (owned here alone, so it is reused, not copied).
final class Prefetch: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var buffer: [UInt8]
    private var failure: ServiceError?

    init(reader: ReplayLogReader, after checkpoint: Checkpoint, horizon: Bool, reusing buffer: consuming [UInt8]) {
        self.buffer = buffer
        let thread = Thread { [self] in
            do throws(ServiceError) {
                try reader.fetch(after: checkpoint, horizon: horizon, into: &self.buffer)
            } catch {
                failure = error
            }
            done.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    func wait() throws(ServiceError) -> [UInt8] {
        done.wait()
        if let failure { throw failure }
        var data: [UInt8] = []
        swap(&data, &buffer)
        return data
    }
}

/// Work run on a helper thread of its own, waited for with `wait` (used to overlap the server's
/// work with ours: whatever connection `work` uses belongs to that thread until `wait` returns).
final class Background<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let work: () throws(ServiceError) -> Value
    private var result: Result<Value, ServiceError>?

    init(_ work: @escaping () throws(ServiceError) -> Value) {
        self.work = work
        let thread = Thread { [self] in run() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    private func run() {
        do throws(ServiceError) {
            result = .success(try work())
        } catch {
            result = .failure(error)
        }
        done.signal()
    }

    func wait() throws(ServiceError) -> Value {
        done.wait()
        done.signal()  // later waits return at once
        return try result!.get()
    }
}

/// COPY text format helpers (rows out, rows in).
enum CopyText {
    /// Calls `row` with the fields of each row of COPY text output, as slices of `bytes` still
    /// escaped (see `field`): no allocation per field.
    static func forEachRow(_ bytes: [UInt8], _ row: (UnsafeBufferPointer<UInt8>, [Range<Int>]) -> Void) {
        bytes.withUnsafeBufferPointer { buffer in
            var fields: [Range<Int>] = []
            var start = 0
            let n = buffer.count
            while start < n {
                // Fields are short but for the last (a document): find the row's end first.
                let end = ReplayLogReader.find(0x0A, in: buffer, from: start, to: n) ?? n
                var field = start
                while let tab = ReplayLogReader.find(0x09, in: buffer, from: field, to: end) {
                    fields.append(field..<tab)
                    field = tab + 1
                }
                fields.append(field..<end)
                row(buffer, fields)
                fields.removeAll(keepingCapacity: true)
                start = end + 1
            }
        }
    }

    /// One field of `forEachRow`, unescaped.
    static func field(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> [UInt8] {
        let bytes = UnsafeBufferPointer(rebasing: buffer[range])
        return ReplayLogReader.find(0x5C, in: buffer, from: range.lowerBound, to: range.upperBound) != nil
            ? ReplayLogReader.unescape(bytes) : Array(bytes)
    }

    static func string(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        let bytes = UnsafeBufferPointer(rebasing: buffer[range])
        return bytes.contains(0x5C)
            ? String(decoding: ReplayLogReader.unescape(bytes), as: UTF8.self) : String(decoding: bytes, as: UTF8.self)
    }

    static func integer(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int64 {
        var value: Int64 = 0
        var negative = false
        for index in range {
            if buffer[index] == 0x2D { negative = true } else { value = value &* 10 &+ Int64(buffer[index] &- 0x30) }
        }
        return negative ? -value : value
    }
}
