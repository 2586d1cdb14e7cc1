import EventStore
import Foundation
import Infrastructure

extension ReplayEngine.Run {
    /// Reads and folds every event after `position`. The next batch is fetched on a helper
    /// thread while the current one is decoded and folded, so the server's work (index scan,
    /// jsonb output) overlaps with ours. With `readingLive` (the first read), the live tables
    /// are read on a second connection as soon as the last batch has been fetched: judging
    /// needs them read after the fold's reads, not after its decoding.
    ///
    /// Fetching the next two batches at once on two connections was tried: on 2 cores the
    /// second server process took the CPU our folding threads needed (3.8 s against 3.4 s).
    package mutating func readToEnd(phase: String, horizon: Bool = true, readingLive: Bool = false) throws(ServiceError)
    {
        let reader = ReplayLogReader(connection: connection, batchSize: options.batchSize)
        tick(phase)
        var requested = Self.firstBatchSize(options.batchSize)
        var pending: [UInt8]? = try reader.fetch(after: position, horizon: horizon, limit: requested)
        // The buffer of the batch before, handed to the next fetch (two buffers in turn).
        var spare: [UInt8] = []
        while let bytes = pending {
            pending = nil
            let (rows, last) = ReplayLogReader.summary(bytes)
            guard let last else { break }
            var prefetch: Prefetch?
            if rows < requested, readingLive { _ = try liveReading() }
            if rows >= requested {
                requested = options.batchSize
                var handed: [UInt8] = []
                Swift.swap(&handed, &spare)
                prefetch = Prefetch(reader: reader, after: last, horizon: horizon, reusing: consume handed)
            }
            do {
                try fold(bytes, through: last, phase: phase)
            } catch {
                _ = try? prefetch?.wait()
                throw error
            }
            spare = bytes
            if let prefetch {
                let waitStart = Date()
                pending = try prefetch.wait()
                waitSeconds += Date().timeIntervalSince(waitStart)
            }
        }
        if readingLive { _ = try liveReading() }
    }

    /// A small first batch: nothing of ours overlaps the first fetch, so the sooner it is
    /// here, the sooner decoding runs beside the server's work on the next one.
    package static func firstBatchSize(_ batchSize: Int) -> Int { max(1, batchSize / 8) }

    /// Decodes a fetched batch (on several threads) and folds it; `position` moves to `last`.
    package mutating func fold(_ bytes: [UInt8], through last: Checkpoint, phase: String) throws(ServiceError) {
        let decodeStart = Date()
        let batch = try subjects.decode(bytes, parts: ReplayEngine.parallelism)
        let foldStart = Date()
        state.apply(batch.parts)
        if position == .start { state.reserve(extrapolatingTo: estimatedTotal) }
        position = last
        decodeSeconds += foldStart.timeIntervalSince(decodeStart)
        foldSeconds += Date().timeIntervalSince(foldStart)
        tick(phase)
    }

    /// The replay's second connection (same role and settings as its first), opened once.
    package mutating func sideConnection() throws(ServiceError) -> Connection {
        if let side { return side }
        let connection = try ReplayLive.connect(conninfo: engine.conninfo, session: engine.session)
        side = connection
        return connection
    }

    /// The read of the live tables on the second connection, started on the first call.
    package mutating func liveReading() throws(ServiceError) -> (side: Connection, reading: Background<ReplayLive>) {
        let connection = try sideConnection()
        if let liveRead { return (connection, liveRead) }
        let reading = Background { () throws(ServiceError) in try ReplayLive.load(on: connection) }
        liveRead = reading
        return (connection, reading)
    }
}
