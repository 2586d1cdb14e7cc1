import EventStore
import TestSupport
import Testing

@Suite(.tags(.database)) struct AppendOnlyTests {
    private func seeded() throws -> Connection {
        let connection = try Connection(try TestDatabase.shared.freshDatabase())
        _ = try connection.transaction { connection in
            try EventStore().append(
                to: "user:a", expectedVersion: .noStream, events: [NewEvent(type: "Granted", data: json("{}"))],
                idempotencyKey: IdempotencyKey(source: "test", externalId: "1"), on: connection)
        }
        return connection
    }

    @Test func theServiceRoleCannotUpdateDeleteOrTruncateEvents() throws {
        let connection = try seeded()
        try connection.executeScript("SET ROLE iap_ledger_service")
        #expect(try connection.query("SELECT current_user AS u")[0, "u"] == "iap_ledger_service")
        for sql in [
            "UPDATE es.events SET type = 'Forged'", "DELETE FROM es.events", "TRUNCATE es.events",
            "UPDATE es.inbox SET stream_id = 'x'", "DELETE FROM es.inbox",
        ] {
            let error = #expect(throws: DatabaseError.self, "\(sql)") { try connection.execute(sql) }
            #expect(error?.sqlState == "42501", "\(sql)")
        }
        // What it may do: append, read, keep checkpoints.
        let store = EventStore()
        let result = try connection.transaction { connection in
            try store.append(
                to: "user:a", expectedVersion: .exactly(1), events: [NewEvent(type: "Debited", data: json("{}"))],
                on: connection)
        }
        guard case .appended(let events) = result else {
            Issue.record("service role could not append: \(result)")
            return
        }
        #expect(events.map(\.version) == [2])
        #expect(try store.readStream("user:a", on: connection).count == 2)
        try store.saveCheckpoint(name: "p", Checkpoint(tx: 1, seq: 1), on: connection)
        try connection.executeScript("CREATE TABLE proj.scratch (id int)")  // it owns proj
    }

    @Test func theTriggerRefusesChangesEvenToTheOwner() throws {
        let connection = try seeded()  // cluster superuser, owner of the tables
        for sql in [
            "UPDATE es.events SET type = 'Forged'", "DELETE FROM es.events WHERE false", "TRUNCATE es.events",
            "DELETE FROM es.inbox", "TRUNCATE es.inbox",
        ] {
            let error = #expect(throws: DatabaseError.self, "\(sql)") { try connection.execute(sql) }
            #expect(error?.sqlState == DatabaseError.appendOnlyViolation, "\(sql)")
            #expect(error?.message.contains("append-only") == true)
        }
        #expect(try connection.query("SELECT type FROM es.events")[0, "type"] == "Granted")
    }
}
