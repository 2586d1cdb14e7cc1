import EventStore
import Foundation
import TestSupport
import Testing

@testable import Infrastructure
@testable import Replay

/// A replay's swap registers, under its locks, the user streams older code wrote by user id
/// after migration 0047 (`SubjectsTable.registerLegacyStreams`): their subject is their id. Only
/// streams without a subject whose first event is in clear (schema version 1) count.
@Suite(.tags(.database)) struct ReplayLegacyStreamsTests {
    @Test func theSwapRegistersUserStreamsWithoutASubjectWhoseFirstEventIsInClear() throws {
        let conninfo = try TestDatabase.shared.freshDatabase()
        try ReplayBenchmarkLog.seed(events: 200, users: 20, conninfo: conninfo)
        let connection = try Connection(conninfo)
        // Three users whose streams older code started after 0047 ran: no subject row.
        _ = try connection.execute("DELETE FROM identity.subjects WHERE user_id IN ('bench-1', 'bench-2', 'bench-3')")
        // A stream without a subject whose first event is sealed (schema version 2): not older code's.
        _ = try connection.execute(
            """
            INSERT INTO es.events (stream_id, version, type, schema_version, data)
            VALUES ('user:s_unknown', 1, 'ChainClaimed', 2,
                    '{"userId": "s_unknown", "originalTransactionId": "9000000001", "at": 1767225600000}')
            """)
        _ = try connection.execute("INSERT INTO es.streams (stream_id, version) VALUES ('user:s_unknown', 1)")
        #expect(try count("SELECT count(*) AS n FROM identity.subjects", on: connection) == 17)

        let report = try ReplayEngine.judging(with: ReplayBenchmarkLog.catalog, conninfo: conninfo).run(ReplayOptions())
        #expect(report.swapped)

        // 17 kept + the 3 legacy streams again, each its own subject, without a key.
        #expect(try count("SELECT count(*) AS n FROM identity.subjects", on: connection) == 20)
        let registered = try connection.query(
            """
            SELECT user_id FROM identity.subjects
            WHERE user_id IN ('bench-1', 'bench-2', 'bench-3') AND subject = user_id AND key IS NULL
            ORDER BY user_id
            """)
        #expect((0..<registered.count).map { registered[$0, 0] } == ["bench-1", "bench-2", "bench-3"])
        #expect(
            try count("SELECT count(*) AS n FROM identity.subjects WHERE user_id = 's_unknown'", on: connection) == 0)
    }

    private func count(_ sql: String, on connection: Connection) throws -> Int64? {
        try connection.query(sql).int64(0, "n")
    }
}
