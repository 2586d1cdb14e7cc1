import EventStore
import Foundation
import Synchronization
import TestSupport
import Testing

private struct Retry: Error {}

@Suite(.tags(.database)) struct EventStoreTests {
    let store = EventStore()

    private func event(_ type: String, _ data: String = "{}", payload: String? = nil) -> NewEvent {
        NewEvent(type: type, data: json(data), metadata: json(#"{"source":"test"}"#), payload: payload)
    }

    private func appendOne(
        _ connection: Connection, _ stream: String, _ expected: ExpectedVersion, _ events: [NewEvent],
        key: IdempotencyKey? = nil
    ) throws -> AppendResult {
        try connection.transaction { connection in
            try store.append(to: stream, expectedVersion: expected, events: events, idempotencyKey: key, on: connection)
        }
    }

    @Test func payloadsAndDataWithQuotesBackslashesAndUnicodeRoundTrip() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let payload = #"a"b\c\"d""# + "é\u{301}\"😀{},NULL"
        let data = #"{"s": "q\"uote \\ back", "u": "é😀"}"#
        let result = try appendOne(connection, "user:\"odd\\", .noStream, [event("Odd", data, payload: payload)])
        guard case .appended = result else {
            Issue.record("expected appended, got \(result)")
            return
        }
        let read = try store.readStream("user:\"odd\\", on: connection)
        #expect(read.count == 1)
        #expect(read.first?.payload == payload)
        #expect(read.first.map { String(decoding: $0.data, as: UTF8.self) } == data)
    }

    @Test func appendsAndReadsAStream() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let result = try appendOne(
            connection, "user:a", .noStream, [event("Granted", #"{"n": 1}"#, payload: "jws"), event("Debited")])
        guard case .appended(let recorded) = result else {
            Issue.record("expected appended, got \(result)")
            return
        }
        #expect(recorded.map(\.version) == [1, 2])
        #expect(recorded.map(\.type) == ["Granted", "Debited"])
        #expect(recorded[0].seq < recorded[1].seq)
        #expect(recorded[0].tx == recorded[1].tx)
        #expect(try store.streamVersion("user:a", on: connection) == 2)
        #expect(try store.streamVersion("user:none", on: connection) == 0)

        let read = try store.readStream("user:a", on: connection)
        #expect(read.map(\.version) == [1, 2])
        #expect(read[0].payload == "jws")
        #expect(read[1].payload == nil)
        #expect(read[0].seq == recorded[0].seq && read[0].recordedAt == recorded[0].recordedAt)
        #expect(String(decoding: read[0].data, as: UTF8.self) == #"{"n": 1}"#)
        #expect(try store.readStream("user:a", after: 1, on: connection).map(\.version) == [2])

        let conflict = try appendOne(connection, "user:a", .exactly(1), [event("Late")])
        #expect(conflict == .conflict(stream: "user:a", expected: 1, actual: 2))
        let noStream = try appendOne(connection, "user:a", .noStream, [event("Late")])
        #expect(noStream == .conflict(stream: "user:a", expected: 0, actual: 2))
        // A conflict leaves the transaction usable: nothing was written, so it may even retry in place
        // (the Service instead rolls back and redoes the whole unit of work).
        let retried = try connection.transaction { connection in
            let first = try store.append(
                to: "user:a", expectedVersion: .exactly(1), events: [event("Retry")], on: connection)
            #expect(first == .conflict(stream: "user:a", expected: 1, actual: 2))
            return try store.append(
                to: "user:a", expectedVersion: .exactly(2), events: [event("Retry")], on: connection)
        }
        guard case .appended(let retriedEvents) = retried else {
            Issue.record("expected appended, got \(retried)")
            return
        }
        #expect(retriedEvents.map(\.version) == [3])
        guard case .appended(let third) = try appendOne(connection, "user:a", .any, [event("Any")]) else {
            Issue.record("expected appended")
            return
        }
        #expect(third.map(\.version) == [4])
    }

    @Test func readsAStreamAsOfARecordedTime() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        guard case .appended(let first) = try appendOne(connection, "user:t", .noStream, [event("One")]) else {
            Issue.record("expected appended")
            return
        }
        // The second append is recorded a millisecond later at least (its transaction starts after).
        try eventually("PostgreSQL's clock to pass the first append", within: 5, every: 0.001) {
            try connection.query(
                "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint > $1::bigint AS passed",
                [String(first[0].recordedAt)]
            ).bool(0, "passed") == true
        }
        _ = try appendOne(connection, "user:t", .exactly(1), [event("Two")])
        let asOf = try store.readStream("user:t", recordedUpTo: first[0].recordedAt, on: connection)
        #expect(asOf.map(\.type) == ["One"])
        #expect(try store.readStream("user:t", recordedUpTo: first[0].recordedAt - 1, on: connection).isEmpty)
    }

    @Test func sixteenConcurrentWritersNeverLoseOrDuplicateAVersion() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let writers = 16
        let eventsPerWriter = 10
        let conflicts = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let barrier = Barrier(writers)
        let store = self.store
        onThreads(writers) { writer in
            do {
                let connection = try Connection(conninfo)
                var first = true
                for index in 0..<eventsPerWriter {
                    while true {
                        let head = try store.streamVersion("user:hot", on: connection)
                        if first {
                            // Everyone read head 0: exactly one of the first appends can win.
                            barrier.wait()
                            first = false
                        }
                        let data = #"{"writer": \#(writer), "index": \#(index)}"#
                        do {
                            try connection.transaction { connection in
                                let result = try store.append(
                                    to: "user:hot", expectedVersion: .exactly(head),
                                    events: [NewEvent(type: "Debited", data: json(data))], on: connection)
                                if case .conflict = result { throw Retry() }  // roll back, re-read, retry
                            }
                            break
                        } catch is Retry {
                            conflicts.add(1, ordering: .relaxed)
                        }
                    }
                }
            } catch {
                failures.withLock { $0.append("writer \(writer): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(conflicts.load(ordering: .relaxed) >= writers - 1)  // at least the first round's losers
        let connection = try Connection(conninfo)
        let rows = try connection.query(
            """
            SELECT count(*) AS n, count(DISTINCT version) AS versions, min(version) AS lo, max(version) AS hi,
                count(DISTINCT data) AS distinct_data
            FROM es.events WHERE stream_id = 'user:hot'
            """)
        let total = Int64(writers * eventsPerWriter)
        #expect(rows.int64(0, "n") == total)
        #expect(rows.int64(0, "versions") == total)
        #expect(rows.int64(0, "lo") == 1 && rows.int64(0, "hi") == total)
        #expect(rows.int64(0, "distinct_data") == total)  // every writer's every event, once
        #expect(try store.streamVersion("user:hot", on: connection) == total)
        // Global (tx, seq) order agrees with version order within the stream (docs/eventstore.md §1.1).
        // (Polling: other suites' open transactions may hold the cluster-wide horizon back.)
        let all = try readUntil(
            { $0.count == Int(total) }, { try store.readAll(after: .start, limit: 10_000, on: connection) })
        #expect(all.map(\.version) == (1...total).map { $0 })
    }

    @Test func losersOfARaceGetAConflict() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let writers = 16
        let barrier = Barrier(writers)
        let outcomes = Mutex<[AppendResult]>([])
        let store = self.store
        onThreads(writers) { writer in
            guard let connection = try? Connection(conninfo) else { return }
            barrier.wait()
            let result = try? connection.transaction { connection in
                try store.append(
                    to: "user:race", expectedVersion: .noStream,
                    events: [NewEvent(type: "Granted", data: json(#"{"w": \#(writer)}"#))], on: connection)
            }
            if let result { outcomes.withLock { $0.append(result) } }
        }
        let results = outcomes.withLock { $0 }
        #expect(results.count == writers)
        #expect(results.filter { if case .appended = $0 { true } else { false } }.count == 1)
        #expect(results.filter { $0 == .conflict(stream: "user:race", expected: 0, actual: 1) }.count == writers - 1)
    }

    @Test func catchUpReaderNeverSkipsAnEventThatCommitsLateWithALowerSeq() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let writerA = try Connection(conninfo)
        let writerB = try Connection(conninfo)
        let reader = try Connection(conninfo)

        // T_A inserts first (lower seq) and keeps its transaction open.
        try writerA.executeScript("BEGIN")
        guard
            case .appended(let a) = try store.append(
                to: "user:A", expectedVersion: .noStream, events: [event("A")], on: writerA)
        else {
            Issue.record("A not appended")
            return
        }
        // T_B inserts later (higher seq) and commits.
        guard case .appended(let b) = try appendOne(writerB, "user:B", .noStream, [event("B")]) else {
            Issue.record("B not appended")
            return
        }
        #expect(a[0].seq < b[0].seq)

        // A naive `seq > checkpoint` reader would already see B and move past A's seq for good.
        #expect(try reader.query("SELECT seq FROM es.events ORDER BY seq").int64(0, "seq") == b[0].seq)
        // The xid-horizon reader returns nothing while A is in flight.
        #expect(try store.readAll(after: .start, limit: 100, on: reader).isEmpty)

        try writerA.executeScript("COMMIT")
        // The horizon is cluster-wide: other tests' open transactions can hold it back briefly,
        // so read as a catch-up loop does, polling.
        let both = try readUntil(
            { $0.count == 2 }, { try store.readAll(after: .start, limit: 100, on: reader) })
        #expect(both.map(\.type) == ["A", "B"])
        try #require(both.count == 2)
        #expect(both.map(\.seq) == [a[0].seq, b[0].seq])

        // Paging from a checkpoint continues after it.
        let firstPage = try readUntil { try store.readAll(after: .start, limit: 1, on: reader) }
        #expect(firstPage.map(\.type) == ["A"])
        try #require(firstPage.count == 1)
        #expect(
            try readUntil { try store.readAll(after: firstPage[0].checkpoint, limit: 10, on: reader) }.map(\.type) == [
                "B"
            ])
        #expect(try store.readAll(after: both[1].checkpoint, limit: 10, on: reader).isEmpty)
    }

    @Test func appendMustBeTheFirstWriteOfItsTransaction() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let error = #expect(throws: DatabaseError.self) {
            try connection.transaction { connection in
                _ = try connection.query("SELECT pg_current_xact_id()")  // takes an xid, as a write would
                return try store.append(to: "user:x", expectedVersion: .any, events: [event("X")], on: connection)
            }
        }
        #expect(error?.sqlState == DatabaseError.appendNotFirstWrite)
        // Projection writes after the append, in the same transaction, are fine.
        try connection.transaction { connection in
            _ = try store.append(to: "user:x", expectedVersion: .noStream, events: [event("X")], on: connection)
            try store.saveCheckpoint(name: "inline", Checkpoint(tx: 7, seq: 9), on: connection)
        }
        #expect(try store.loadCheckpoint(name: "inline", on: connection) == Checkpoint(tx: 7, seq: 9))
    }

    @Test func theSameIdempotencyKeyTwiceAppendsOnce() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let key = IdempotencyKey(source: "apple", externalId: "notification-1")
        let first = try appendOne(connection, "chain:1", .any, [event("Renewed")], key: key)
        guard case .appended = first else {
            Issue.record("expected appended, got \(first)")
            return
        }
        #expect(try appendOne(connection, "chain:1", .any, [event("Renewed")], key: key) == .duplicate)
        // Even aimed at another stream, the key is the same fact.
        #expect(try appendOne(connection, "chain:2", .any, [event("Renewed")], key: key) == .duplicate)
        #expect(try connection.query("SELECT count(*) AS n FROM es.events").int64(0, "n") == 1)
        let other = try appendOne(
            connection, "chain:1", .any, [event("Renewed")], key: .init(source: "apple", externalId: "n-2"))
        guard case .appended(let events) = other else {
            Issue.record("expected appended")
            return
        }
        #expect(events.map(\.version) == [2])
    }

    @Test func concurrentDuplicatesOnDifferentStreamsWaitAndAnswerDuplicate() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let key = IdempotencyKey(source: "apple", externalId: "dup")
        let holder = try Connection(conninfo)
        try holder.executeScript("BEGIN")
        guard
            case .appended = try store.append(
                to: "chain:x", expectedVersion: .any, events: [event("E")], idempotencyKey: key, on: holder)
        else {
            Issue.record("expected appended")
            return
        }
        let second = Mutex<AppendResult?>(nil)
        let store = self.store
        let started = Barrier(2)
        let waiter = Thread {
            let connection = try? Connection(conninfo)
            started.wait()
            let result = try? connection?.transaction { connection in
                try store.append(
                    to: "chain:y", expectedVersion: .any, events: [NewEvent(type: "E", data: json("{}"))],
                    idempotencyKey: key, on: connection)
            }
            second.withLock { $0 = result }
            started.wait()
        }
        waiter.start()
        started.wait()
        // The second append waits on the idempotency key's advisory lock (it names another stream).
        let waiting = try readUntil {
            try holder.query(
                """
                SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """
            ).isEmpty ? [] : [true]
        }
        #expect(waiting == [true])
        #expect(second.withLock { $0 } == nil)
        try holder.executeScript("COMMIT")
        started.wait()
        #expect(second.withLock { $0 } == .duplicate)
    }

    @Test func oneCommandAppendsToSeveralStreamsAtomically() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        _ = try appendOne(connection, "user:A", .noStream, [event("Granted")])
        let transfer = [
            StreamAppend(stream: "user:A", expectedVersion: .exactly(1), events: [event("TransferredOut")]),
            StreamAppend(
                stream: "user:B", expectedVersion: .noStream, events: [event("TransferredIn"), event("Noted")]),
        ]
        let result = try connection.transaction { try store.append(transfer, idempotencyKey: nil, on: $0) }
        guard case .appended(let events) = result else {
            Issue.record("expected appended, got \(result)")
            return
        }
        #expect(events.map(\.stream) == ["user:A", "user:B", "user:B"])
        #expect(events.map(\.version) == [2, 1, 2])
        #expect(Set(events.map(\.tx)).count == 1)

        // One stale expectation refuses the whole command: nothing is written anywhere.
        let stale = [
            StreamAppend(stream: "user:A", expectedVersion: .exactly(2), events: [event("X")]),
            StreamAppend(stream: "user:B", expectedVersion: .exactly(1), events: [event("Y")]),
        ]
        let refused = try connection.transaction { try store.append(stale, idempotencyKey: nil, on: $0) }
        #expect(refused == .conflict(stream: "user:B", expected: 1, actual: 2))
        #expect(try store.streamVersion("user:A", on: connection) == 2)
        #expect(try connection.query("SELECT count(*) AS n FROM es.events").int64(0, "n") == 4)
    }

    @Test func crossedMultiStreamAppendsDoNotDeadlock() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        let failures = Mutex<[String]>([])
        let store = self.store
        onThreads(8) { writer in
            do {
                let connection = try Connection(conninfo)
                for index in 0..<25 {
                    // Half the writers name the streams in the opposite order.
                    let names = writer % 2 == 0 ? ["user:P", "user:Q"] : ["user:Q", "user:P"]
                    let appends = names.map {
                        StreamAppend(
                            stream: $0, expectedVersion: .any,
                            events: [NewEvent(type: "T", data: json(#"{"i": \#(index)}"#))])
                    }
                    _ = try connection.transaction { try store.append(appends, idempotencyKey: nil, on: $0) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let connection = try Connection(conninfo)
        #expect(try store.streamVersion("user:P", on: connection) == 200)
        #expect(try store.streamVersion("user:Q", on: connection) == 200)
    }

    @Test func checkpointsStartAtTheBeginningAndPersist() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        #expect(try store.loadCheckpoint(name: "analytics", on: connection) == .start)
        try store.saveCheckpoint(name: "analytics", Checkpoint(tx: 1234, seq: 5), on: connection)
        try store.saveCheckpoint(name: "analytics", Checkpoint(tx: 1240, seq: 9), on: connection)
        #expect(try store.loadCheckpoint(name: "analytics", on: connection) == Checkpoint(tx: 1240, seq: 9))
        #expect(Checkpoint(tx: 1, seq: 99) < Checkpoint(tx: 2, seq: 1))
    }

    @Test func jsonWithQuotesAndBackslashesSurvivesTheArrayEncoding() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let tricky = #"{"s": "a \"quoted\" \\ back\\slash, {braces} and ünïcode"}"#
        let result = try appendOne(
            connection, "user:q\"uote", .noStream, [NewEvent(type: "T,{x}", data: json(tricky), payload: "p\"\\{,}")])
        guard case .appended = result else {
            Issue.record("expected appended, got \(result)")
            return
        }
        let read = try store.readStream("user:q\"uote", on: connection)
        #expect(read.count == 1)
        #expect(read.first?.type == "T,{x}")
        #expect(read.first?.payload == "p\"\\{,}")
        let roundTrip = try connection.query("SELECT data->>'s' AS s FROM es.events")[0, "s"]
        #expect(roundTrip == #"a "quoted" \ back\slash, {braces} and ünïcode"#)
    }
}
