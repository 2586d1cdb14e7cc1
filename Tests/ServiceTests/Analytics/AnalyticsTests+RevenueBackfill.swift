import EventStore
import Foundation
import Schema
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

extension AnalyticsTests {
    static func priced(_ id: String, price: Int, revocation: String = "") -> String {
        #"{"transactionId": "\#(id)", "originalTransactionId": "\#(id)", "productId": "com.example.coins100", "bundleId": "com.example", "type": "Consumable", "purchaseDate": 1767225600000, "signedDate": 1767225600000, "environment": "Production", "price": \#(price), "currency": "USD"\#(revocation)}"#
    }

    /// Migration 0037 adds `transaction_versions` and `transactions.revocation_percentage` without
    /// a rebuild: the versions already projected are copied from the log up to the checkpoint
    /// (those past it are catch_up's), so revenue_movements sees the money of rows projected
    /// before it — here a 990 charge and a later 50 % prorated refund of it (−495, proceeds
    /// 990 × 0.70 = 693 and −(495 × 0.70 = 346.5 → 346)).
    @Test func migration0037CopiesTheVersionsProjectedBeforeIt() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        _ = try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all.filter { $0.version < 37 })
        let refund =
            #", "signedDate": 1767312000000, "revocationDate": 1767312000000, "revocationType": "REFUND_PRORATED", "revocationPercentage": 50000"#
        try connection.execute(
            "INSERT INTO es.events (stream_id, version, type, data) VALUES ('s-c', 1, 'TransactionRecorded', $1::jsonb)",
            [Self.priced("c-1", price: 990)])
        try connection.execute(
            "INSERT INTO es.events (stream_id, version, type, data) VALUES ('s-c', 2, 'TransactionRecorded', $1::jsonb)",
            [
                Self.priced("c-1", price: 990, revocation: refund).replacingOccurrences(
                    of: #""signedDate": 1767225600000, "#, with: "")
            ])
        #expect(try Self.catchUp(2, on: connection))
        // One more event after the checkpoint: catch_up's to copy, not the migration's.
        try connection.execute(
            "INSERT INTO es.events (stream_id, version, type, data) VALUES ('s-d', 1, 'TransactionRecorded', $1::jsonb)",
            [Self.priced("d-1", price: 1990)])

        #expect(
            try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all).contains {
                $0.hasPrefix("0037")
            })
        #expect(try connection.query("SELECT count(*) FROM analytics.transaction_versions")[0, 0] == "2")
        #expect(
            try connection.query(
                "SELECT revocation_percentage FROM analytics.transactions WHERE transaction_id = 'c-1'")[0, 0]
                == "50000")
        #expect(try Self.catchUp(1, on: connection))
        let rows = try connection.query(
            "SELECT transaction_id, kind, amount_milli, proceeds_milli FROM analytics.revenue_movements ORDER BY transaction_id, at"
        )
        #expect(
            (0..<rows.count).map { row in (0..<4).map { column in rows[row, column]! }.joined(separator: " ") }
                == ["c-1 charge 990 693", "c-1 refund -495 -346", "d-1 charge 1990 1393"])
    }

    /// Applies `events` events with catch_up, polling: it applies only what is below the cluster's
    /// xid horizon, which another test's open transaction (the cluster is shared) holds back a while.
    static func catchUp(_ events: Int, on connection: Connection) throws -> Bool {
        var applied = 0
        try? eventually("\(events) events applied", within: 30) {
            applied += try AnalyticsProjector.catchUp(on: connection)
            return applied >= events
        }
        return applied == events
    }
}
