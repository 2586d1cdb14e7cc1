import EventStore
import Foundation
import Infrastructure
import Ledger
import Synchronization

/// Reads the event log for replay in large `COPY … TO STDOUT` batches, keyset-paged on
/// `(tx, seq)`. Only the columns a fold needs travel (not the signed payloads), and rows are
/// decoded straight from the COPY text buffer without building a `Rows` of Strings.
package struct ReplayLogReader {
    package let connection: Connection
    /// Events per COPY round trip.
    package var batchSize = 100_000

    /// One decoded batch: events with their sequence numbers, in log order across its parts
    /// (one per decoding thread: joining them would copy, retain and release every event), and
    /// the checkpoint reached.
    package struct Batch {
        package typealias Events = [(seq: Int64, event: LedgerEvent)]
        package var parts: [Events] = []
        package var last: Checkpoint?
        /// Subjects named by sealed user events but not in the `Subjects` decoded with (a user
        /// who wrote since they were read, or an erased one): `ReplaySubjects` looks them up.
        package var unknownSubjects: Set<String> = []
        /// Token subjects carried by events but not in the `Subjects` decoded with.
        package var unknownTokenSubjects: Set<String> = []
        /// A person was erased after the subjects were read (their key was still known): the
        /// fold would name them by id. `ReplaySubjects` refuses such a batch.
        package var erasedMeanwhile = false
        package var count: Int { parts.reduce(0) { $0 + $1.count } }
    }

    /// Up to `batchSize` events after `checkpoint`. With `horizon` (the default) only events of
    /// transactions older than every transaction in flight, so nothing committing later can land
    /// behind the returned checkpoint. Without it (only under the writers' table locks) every
    /// committed event visible now.
    package func read(after checkpoint: Checkpoint, horizon: Bool = true, subjects: inout ReplaySubjects)
        throws(ServiceError) -> Batch
    {
        try subjects.decode(fetch(after: checkpoint, horizon: horizon), parts: 1)
    }

    /// The raw COPY text of the next batch (see `read`).
    package func fetch(after checkpoint: Checkpoint, horizon: Bool = true, limit: Int? = nil) throws(ServiceError)
        -> [UInt8]
    {
        var data: [UInt8] = []
        try fetch(after: checkpoint, horizon: horizon, limit: limit, into: &data)
        return data
    }

    /// `fetch` into `data`'s storage (emptied first): batches of tens of megabytes in fresh
    /// arrays would cost their growth copies and page faults every time. At most `limit` events
    /// (`batchSize` when nil).
    package func fetch(
        after checkpoint: Checkpoint, horizon: Bool, limit: Int? = nil, into data: inout [UInt8]
    ) throws(ServiceError) {
        // Only integers we formatted ourselves go into the SQL text (COPY takes no parameters).
        // The catalog's versions and the exchange rates are no ledger events: no user's fold reads them.
        let sql = """
            COPY (SELECT tx, seq, type, schema_version, data FROM es.events
                  WHERE (tx, seq) > ('\(checkpoint.tx)'::xid8, \(checkpoint.seq)::bigint)
                  AND stream_id <> '\(CatalogVersions.stream)' AND stream_id <> '\(ExchangeRates.stream)'
                  \(horizon ? "AND tx < pg_snapshot_xmin(pg_current_snapshot())" : "")
                  ORDER BY tx, seq LIMIT \(limit ?? batchSize)) TO STDOUT
            """
        try copy(sql, into: &data)
    }

    private func copy(_ sql: String, into data: inout [UInt8]) throws(ServiceError) {
        if !data.isEmpty { data.removeAll(keepingCapacity: true) }
        do {
            try connection.copyOut(sql, appendingTo: &data)
        } catch {
            throw .database(error)
        }
    }

    /// The number of rows in a fetched batch and the checkpoint of its last row, without
    /// decoding it (so the next fetch can start while this batch is decoded).
    package static func summary(_ bytes: [UInt8]) -> (rows: Int, last: Checkpoint?) {
        bytes.withUnsafeBufferPointer { buffer -> (Int, Checkpoint?) in
            var rows = 0
            var lastStart = 0
            var index = 0
            let n = buffer.count
            while index < n, let newline = CopyText.find(0x0A, in: buffer, from: index, to: n) {
                rows += 1
                if newline + 1 < n { lastStart = newline + 1 }
                index = newline + 1
            }
            guard rows > 0 else { return (0, nil) }
            var i = lastStart
            var tx: UInt64 = 0
            while i < n, buffer[i] != 0x09 {
                tx = tx &* 10 &+ UInt64(buffer[i] &- 0x30)
                i += 1
            }
            i += 1
            var seq: Int64 = 0
            while i < n, buffer[i] != 0x09 {
                seq = seq &* 10 &+ Int64(buffer[i] &- 0x30)
                i += 1
            }
            return (rows, Checkpoint(tx: tx, seq: seq))
        }
    }

    /// `decode` on `parts` threads (row-aligned slices of the buffer, decoded concurrently,
    /// kept in order): decoding is pure, the fold that follows walks the parts in order.
    package static func decodeInParallel(_ bytes: [UInt8], parts: Int, subjects: Subjects) throws(ServiceError) -> Batch
    {
        guard parts > 1, bytes.count > 1 << 20 else { return try decode(bytes, subjects: subjects) }
        var bounds = [0]
        for part in 1..<parts {
            var cut = bytes.count * part / parts
            while cut < bytes.count, bytes[cut - 1] != 0x0A { cut += 1 }
            bounds.append(cut)
        }
        bounds.append(bytes.count)
        let cuts = bounds
        let results = Mutex<[Int: Result<Batch, ServiceError>]>([:])
        bytes.withUnsafeBufferPointer { buffer in
            let whole = UnsafeSendableBuffer(buffer)
            DispatchQueue.concurrentPerform(iterations: parts) { part in
                let slice = UnsafeBufferPointer(rebasing: whole.buffer[cuts[part]..<cuts[part + 1]])
                let result: Result<Batch, ServiceError>
                do throws(ServiceError) {
                    result = .success(try decode(slice, subjects: subjects))
                } catch {
                    result = .failure(error)
                }
                results.withLock { $0[part] = result }
            }
        }
        var batch = Batch()
        var all = results.withLock { $0 }
        for part in 0..<parts {
            let piece = try all.removeValue(forKey: part)!.get()
            batch.parts.append(contentsOf: piece.parts)
            batch.unknownSubjects.formUnion(piece.unknownSubjects)
            batch.unknownTokenSubjects.formUnion(piece.unknownTokenSubjects)
            batch.erasedMeanwhile = batch.erasedMeanwhile || piece.erasedMeanwhile
            if piece.last != nil { batch.last = piece.last }
        }
        return batch
    }

    /// Parses COPY text rows `tx \t seq \t type \t schema_version \t data \n`.
    package static func decode(_ bytes: [UInt8], subjects: Subjects) throws(ServiceError) -> Batch {
        try bytes.withUnsafeBufferPointer { buffer throws(ServiceError) in try decode(buffer, subjects: subjects) }
    }

    package static func decode(_ buffer: UnsafeBufferPointer<UInt8>, subjects: Subjects) throws(ServiceError) -> Batch {
        var batch = Batch()
        var events: Batch.Events = []
        events.reserveCapacity(buffer.count / 300)
        var decoder = LedgerEventDecoder()
        do {
            var i = 0
            let n = buffer.count
            func field() -> Range<Int> {
                let start = i
                while i < n, buffer[i] != 0x09, buffer[i] != 0x0A { i += 1 }
                let range = start..<i
                i += 1  // the separator
                return range
            }
            func integer(_ range: Range<Int>) -> Int64 {
                var value: Int64 = 0
                for index in range { value = value &* 10 &+ Int64(buffer[index] &- 0x30) }
                return value
            }
            while i < n {
                let tx = integer(field())
                let seq = integer(field())
                let typeRange = field()
                let schemaVersion = Int(integer(field()))
                // The data is the last field: it runs to the row's end (COPY escapes newlines).
                let end = CopyText.find(0x0A, in: buffer, from: i, to: n) ?? n
                let dataRange = i..<end
                i = end + 1
                let type = typeName(UnsafeBufferPointer(rebasing: buffer[typeRange]))
                let data = UnsafeBufferPointer(rebasing: buffer[dataRange])
                batch.last = Checkpoint(tx: UInt64(tx), seq: seq)
                if schemaVersion == SubjectCodec.sealedSchemaVersion {
                    let escaped = CopyText.find(0x5C, in: buffer, from: dataRange.lowerBound, to: end) != nil
                    let raw = escaped ? CopyText.unescape(data) : Array(data)
                    if let event = try sealedEvent(type: type, seq: seq, data: raw, subjects: subjects, batch: &batch) {
                        events.append((seq, event))
                    }
                    continue
                }
                do {
                    var event: LedgerEvent
                    if CopyText.find(0x5C, in: buffer, from: dataRange.lowerBound, to: end) != nil {
                        // a backslash: COPY escaped something, undo it first
                        event = try LedgerEvent.decode(
                            type: type, schemaVersion: schemaVersion, data: CopyText.unescape(data))
                    } else {
                        event = try decoder.decode(type: type, schemaVersion: schemaVersion, data: data)
                    }
                    event = restoringTokens(event, subjects: subjects, batch: &batch)
                    events.append((seq, event))
                } catch {
                    throw .internalError("event \(seq) does not decode: \(error)")
                }
            }
        }
        if !events.isEmpty { batch.parts = [events] }
        return batch
    }

    /// A user's sealed event (schema version 2) as the fold reads it: opened with its owner's
    /// key, subjects turned back into user ids; nil when an erased person's event has nothing
    /// the fold needs. Subjects not in `subjects` are noted in the batch.
    private static func sealedEvent(
        type: String, seq: Int64, data: [UInt8], subjects: Subjects, batch: inout Batch
    ) throws(ServiceError) -> LedgerEvent? {
        guard let owner = SubjectCodec.owner(ofStored: data) else {
            throw .internalError("event \(seq) is sealed but names no subject")
        }
        let known = subjects.bySubject[owner]
        if known == nil { batch.unknownSubjects.insert(owner) }
        if known != nil, type == "SubjectErased" { batch.erasedMeanwhile = true }
        guard
            let event = try SubjectCodec.unsealed(
                type: type, stream: LedgerRoute.userPrefix + owner, data: data, seq: seq, key: known?.key)
        else { return nil }
        for id in event.userIds where subjects.bySubject[id] == nil { batch.unknownSubjects.insert(id) }
        return restoringTokens(
            SubjectCodec.restoringUserIds(event, subjects: subjects), subjects: subjects, batch: &batch)
    }

    /// `event` with the tokens behind the token subjects it carries (noting those not known).
    @inline(__always)
    private static func restoringTokens(_ event: LedgerEvent, subjects: Subjects, batch: inout Batch) -> LedgerEvent {
        guard let token = event.token, TokenSubject.isSubject(token) else { return event }
        if subjects.byTokenSubject[token] == nil { batch.unknownTokenSubjects.insert(token) }
        return subjects.restoringTokens(event)
    }

    /// A buffer handed to worker threads that only read it while its owner waits for them.
    package struct UnsafeSendableBuffer: @unchecked Sendable {
        package let buffer: UnsafeBufferPointer<UInt8>
        package init(_ buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }
    }

    /// Interned type names: no String allocation per row.
    private static func typeName(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        for (name, utf8) in knownTypes where utf8.count == bytes.count && utf8.elementsEqual(bytes) { return name }
        return String(decoding: bytes, as: UTF8.self)
    }
    private static let knownTypes: [(String, [UInt8])] = LedgerEvent.typeNames.map { ($0, Array($0.utf8)) }
}

/// One batch fetched on a helper thread (the connection is used by that thread alone until `wait`),
/// into the storage of a buffer handed over (owned here alone, so it is reused, not copied).
package final class Prefetch: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var buffer: [UInt8]
    private var failure: ServiceError?

    package init(
        reader: ReplayLogReader, after checkpoint: Checkpoint, horizon: Bool, reusing buffer: consuming [UInt8]
    ) {
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

    package func wait() throws(ServiceError) -> [UInt8] {
        done.wait()
        if let failure { throw failure }
        var data: [UInt8] = []
        swap(&data, &buffer)
        return data
    }
}
