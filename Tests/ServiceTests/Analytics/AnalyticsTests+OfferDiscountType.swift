import EventStore
import Schema
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

extension AnalyticsTests {
    static func transactionRecorded(_ id: String, offerDiscountType: String?) -> String {
        let offer = offerDiscountType.map { #", "offerType": 1, "offerDiscountType": "\#($0)""# } ?? ""
        return
            #"{"transactionId": "\#(id)", "originalTransactionId": "\#(id)", "productId": "com.example.monthly", "bundleId": "com.example", "type": "Auto-Renewable Subscription", "purchaseDate": 1767225600000, "expiresDate": 1767830400000, "signedDate": 1767225600000, "environment": "Production", "price": 0, "currency": "USD"\#(offer)}"#
    }

    /// Migration 0036 adds `transactions.offer_discount_type` (a free trial is offer 1 with
    /// FREE_TRIAL) without a rebuild: rows projected before it get theirs from the event each one
    /// was kept from, and catch_up fills it from then on.
    @Test func migration0036FillsTheOfferDiscountTypeOfRowsProjectedBeforeIt() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        _ = try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all.filter { $0.version < 36 })
        for (id, offer) in [("t-trial", "FREE_TRIAL"), ("t-plain", nil)] {
            try connection.execute(
                "INSERT INTO es.events (stream_id, version, type, data) VALUES ($1, 1, 'TransactionRecorded', $2::jsonb)",
                ["s-" + id, Self.transactionRecorded(id, offerDiscountType: offer)])
        }
        #expect(try Self.catchUp(2, on: connection))

        #expect(
            try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all).contains {
                $0.hasPrefix("0036")
            })
        try connection.execute(
            "INSERT INTO es.events (stream_id, version, type, data) VALUES ('s-t-later', 1, 'TransactionRecorded', $1::jsonb)",
            [Self.transactionRecorded("t-later", offerDiscountType: "PAY_UP_FRONT")])
        #expect(try Self.catchUp(1, on: connection))
        let rows = try connection.query(
            "SELECT transaction_id, coalesce(offer_discount_type, 'NULL') FROM analytics.transactions ORDER BY transaction_id"
        )
        #expect(
            (0..<rows.count).map { "\(rows[$0, 0]!) \(rows[$0, 1]!)" }
                == ["t-later PAY_UP_FRONT", "t-plain NULL", "t-trial FREE_TRIAL"])
    }
}
