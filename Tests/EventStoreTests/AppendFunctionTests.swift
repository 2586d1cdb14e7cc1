import EventStore
import TestSupport
import Testing

/// The SQL contract of `es.append` itself (docs/eventstore.md §6), called directly: refused
/// arguments, interleaved streams, streams listed only for their expectation, the inbox row.
@Suite(.tags(.database)) struct AppendFunctionTests {
    static let call = """
        SELECT status, stream_id, expected, actual, seq, version
        FROM es.append($1::text[], $2::bigint[], $3, $4, $5::text[], $6::text[], $7::smallint[], $8::jsonb[], $9::jsonb[], $10::text[])
        """

    /// Runs es.append in its own transaction with the arguments as array literals.
    private func append(
        _ connection: Connection, streams: String, expected: String, source: String? = nil, externalId: String? = nil,
        eventStreams: String, types: String, schemaVersions: String, data: String, metadata: String, payloads: String
    ) throws -> Rows {
        try connection.transaction { connection in
            try connection.query(
                Self.call,
                [streams, expected, source, externalId, eventStreams, types, schemaVersions, data, metadata, payloads])
        }
    }

    @Test func malformedArgumentsAreRefusedAndWriteNothing() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        // (streams, expected, source, external id, event streams, types): one defect each.
        let cases: [(String, String, String?, String?, String, String)] = [
            ("{a,a}", "{NULL,NULL}", nil, nil, "{a}", "{T}"),  // a stream twice
            ("{a,b,a}", "{NULL,NULL,NULL}", nil, nil, "{a}", "{T}"),  // a stream twice, not adjacent
            ("{a,NULL}", "{NULL,NULL}", nil, nil, "{a}", "{T}"),  // a NULL stream
            ("{a}", "{NULL}", nil, nil, "{b}", "{T}"),  // an event of an unlisted stream
            ("{a}", "{NULL}", nil, nil, "{NULL}", "{T}"),  // an event of no stream
            ("{a}", "{NULL,NULL}", nil, nil, "{a}", "{T}"),  // expectations do not match streams
            ("{a}", "{NULL}", nil, nil, "{a}", "{T,U}"),  // types do not match events
            ("{}", "{}", nil, nil, "{a}", "{T}"),  // no stream
            ("{a}", "{NULL}", nil, nil, "{}", "{}"),  // no event
            ("{a}", "{NULL}", "apple", nil, "{a}", "{T}"),  // a source without an external id
        ]
        for (streams, expected, source, externalId, eventStreams, types) in cases {
            let n = eventStreams == "{}" ? 0 : 1 + eventStreams.filter { $0 == "," }.count
            let list = { (value: String) in "{" + Array(repeating: value, count: n).joined(separator: ",") + "}" }
            let error = #expect(throws: DatabaseError.self, "\(streams) \(eventStreams) \(types)") {
                try append(
                    connection, streams: streams, expected: expected, source: source, externalId: externalId,
                    eventStreams: eventStreams, types: types, schemaVersions: list("1"), data: list("\"{}\""),
                    metadata: list("\"{}\""), payloads: list("NULL"))
            }
            #expect(error?.sqlState == "22023", "\(streams) \(eventStreams) \(types): \(String(describing: error))")
        }
        #expect(try connection.query("SELECT count(*) AS n FROM es.events").int64(0, "n") == 0)
        #expect(try connection.query("SELECT count(*) AS n FROM es.streams").int64(0, "n") == 0)
    }

    @Test func interleavedStreamsAreNumberedPerStreamAndAnsweredInAppendOrder() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let rows = try append(
            connection, streams: "{b,a}", expected: "{0,NULL}", eventStreams: "{a,b,a,a}", types: "{A1,B1,A2,A3}",
            schemaVersions: "{1,2,NULL,1}", data: #"{"{\"n\": 1}","{}","{}","{}"}"#, metadata: "{NULL,NULL,NULL,NULL}",
            payloads: "{p1,NULL,p3,NULL}")
        #expect(rows.count == 4)
        #expect((0..<4).map { rows[$0, "status"] } == ["appended", "appended", "appended", "appended"])
        #expect((0..<4).map { rows[$0, "stream_id"] } == ["a", "b", "a", "a"])
        #expect((0..<4).map { rows.int64($0, "version") } == [1, 1, 2, 3])
        #expect((0..<4).allSatisfy { rows[$0, "expected"] == nil && rows[$0, "actual"] == nil })
        let seqs = (0..<4).map { rows.int64($0, "seq")! }
        #expect(seqs == seqs.sorted() && Set(seqs).count == 4)
        let stored = try connection.query(
            "SELECT stream_id, version, type, schema_version, metadata::text AS m, payload FROM es.events ORDER BY seq")
        #expect((0..<4).map { stored[$0, "type"] } == ["A1", "B1", "A2", "A3"])
        #expect((0..<4).map { stored.int64($0, "schema_version") } == [1, 2, 1, 1])  // NULL means 1
        #expect((0..<4).map { stored[$0, "m"] } == ["{}", "{}", "{}", "{}"])  // NULL means {}
        #expect((0..<4).map { stored[$0, "payload"] } == ["p1", nil, "p3", nil])
        let heads = try connection.query("SELECT stream_id, version FROM es.streams ORDER BY stream_id")
        #expect((0..<heads.count).map { "\(heads[$0, 0]!)=\(heads[$0, 1]!)" } == ["a=3", "b=1"])
    }

    @Test func aStreamListedWithoutEventsIsCheckedButNotWritten() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        let conflict = try append(
            connection, streams: "{a,guard}", expected: "{NULL,4}", eventStreams: "{a}", types: "{T}",
            schemaVersions: "{1}", data: #"{"{}"}"#, metadata: "{NULL}", payloads: "{NULL}")
        #expect(conflict.count == 1)
        #expect(conflict[0, "status"] == "conflict")
        #expect(conflict[0, "stream_id"] == "guard")
        #expect(conflict.int64(0, "expected") == 4 && conflict.int64(0, "actual") == 0)
        #expect(try connection.query("SELECT count(*) AS n FROM es.events").int64(0, "n") == 0)

        let appended = try append(
            connection, streams: "{a,guard}", expected: "{NULL,0}", eventStreams: "{a}", types: "{T}",
            schemaVersions: "{1}", data: #"{"{}"}"#, metadata: "{NULL}", payloads: "{NULL}")
        #expect(appended.count == 1 && appended[0, "status"] == "appended")
        let heads = try connection.query("SELECT stream_id FROM es.streams")
        #expect(heads.count == 1 && heads[0, 0] == "a")
    }

    @Test func theInboxRowPointsAtTheLastEventOfTheFirstEventsStream() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        _ = try append(
            connection, streams: "{x}", expected: "{NULL}", eventStreams: "{x}", types: "{T}", schemaVersions: "{1}",
            data: #"{"{}"}"#, metadata: "{NULL}", payloads: "{NULL}")
        let rows = try append(
            connection, streams: "{y,x}", expected: "{NULL,NULL}", source: "apple", externalId: "n-1",
            eventStreams: "{x,y,x}", types: "{T,U,V}", schemaVersions: "{1,1,1}", data: #"{"{}","{}","{}"}"#,
            metadata: "{NULL,NULL,NULL}", payloads: "{NULL,NULL,NULL}")
        #expect((0..<rows.count).map { rows.int64($0, "version") } == [2, 1, 3])
        let inbox = try connection.query(
            "SELECT stream_id, version FROM es.inbox WHERE source = 'apple' AND external_id = 'n-1'")
        #expect(inbox.count == 1 && inbox[0, "stream_id"] == "x" && inbox.int64(0, "version") == 3)
        let again = try append(
            connection, streams: "{x}", expected: "{NULL}", source: "apple", externalId: "n-1", eventStreams: "{x}",
            types: "{T}", schemaVersions: "{1}", data: #"{"{}"}"#, metadata: "{NULL}", payloads: "{NULL}")
        #expect(again.count == 1 && again[0, "status"] == "duplicate")
    }
}
