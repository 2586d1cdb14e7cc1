import EventStore
import Foundation
import Schema
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

extension AnalyticsTests {
    /// Migration 0043 gives every transaction version all of its transaction's columns and keeps
    /// every renewal info version, without a rebuild: the rows projected before it are filled from
    /// the log up to the checkpoint (what lies past it is catch_up's), so the overview's asOf sees
    /// them — here a 990 charge refunded by half after an instant T, and a renewal info that turned
    /// billing retry on after T.
    @Test func migration0043FillsTheVersionsProjectedBeforeIt() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        _ = try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all.filter { $0.version < 43 })
        func append(_ stream: String, _ version: Int, _ type: String, _ data: String) throws {
            try connection.execute(
                "INSERT INTO es.events (stream_id, version, type, data) VALUES ($1, $2, $3, $4::jsonb)",
                [stream, String(version), type, data])
        }
        let renewal =
            #"{"originalTransactionId": "c-1", "productId": "com.example.coins100", "autoRenewStatus": 1, "isInBillingRetryPeriod": RETRY, "signedDate": SIGNED, "environment": "Production"}"#
        try append("s-c", 1, "TransactionRecorded", Self.priced("c-1", price: 990))
        try append(
            "s-c", 2, "RenewalInfoRecorded",
            renewal.replacingOccurrences(of: "RETRY", with: "false").replacingOccurrences(
                of: "SIGNED", with: "1767225600000"))
        #expect(try Self.catchUp(2, on: connection))
        let instant = try connection.query("SELECT clock_timestamp()")[0, 0]
        try eventually(
            "(try? connection.query(\"SELECT clock_timestamp() > $1::timestamptz\", [instant])[0, 0]) == \"t\"",
            within: 5
        ) {
            (try? connection.query("SELECT clock_timestamp() > $1::timestamptz", [instant])[0, 0]) == "t"
        }
        let refund =
            #", "signedDate": 1767312000000, "revocationDate": 1767312000000, "revocationType": "REFUND_PRORATED", "revocationPercentage": 50000"#
        try append(
            "s-c", 3, "TransactionRecorded",
            Self.priced("c-1", price: 990, revocation: refund).replacingOccurrences(
                of: #""signedDate": 1767225600000, "#, with: ""))
        try append(
            "s-c", 4, "RenewalInfoRecorded",
            renewal.replacingOccurrences(of: "RETRY", with: "true").replacingOccurrences(
                of: "SIGNED", with: "1767312000000"))
        #expect(try Self.catchUp(2, on: connection))
        // One more event after the checkpoint: catch_up's to copy, not the migration's.
        try append("s-d", 1, "TransactionRecorded", Self.priced("d-1", price: 1990))

        #expect(
            try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all).contains {
                $0.hasPrefix("0043")
            })
        #expect(
            try connection.query(
                "SELECT string_agg(seq || ' ' || price_milli || ' ' || product_id || ' ' || type, ',' ORDER BY seq) FROM analytics.transaction_versions"
            )[0, 0] == "1 990 com.example.coins100 Consumable,3 990 com.example.coins100 Consumable")
        #expect(
            try connection.query(
                "SELECT string_agg(seq || ' ' || is_in_billing_retry, ',' ORDER BY seq) FROM analytics.renewal_info_versions"
            )[0, 0]
                == "2 false,4 true")
        #expect(try Self.catchUp(1, on: connection))
        // As of the instant: the charge alone (990, proceeds 693) and no billing retry; now the
        // 50 % refund (−495, proceeds −346) too, retry on, and d-1 (1990, proceeds 1393).
        func movements(_ asOf: String) throws -> [String] {
            let rows = try connection.query(
                "SELECT transaction_id, kind, amount_milli, proceeds_milli FROM analytics.revenue_movements_as_of($1::timestamptz) ORDER BY transaction_id, at",
                [asOf])
            return (0..<rows.count).map { row in (0..<4).map { rows[row, $0]! }.joined(separator: " ") }
        }
        #expect(try movements(instant!) == ["c-1 charge 990 693"])
        #expect(try movements("infinity") == ["c-1 charge 990 693", "c-1 refund -495 -346", "d-1 charge 1990 1393"])
        #expect(
            try connection.query(
                "SELECT is_in_billing_retry FROM analytics.renewal_infos_as_of($1::timestamptz)", [instant])[0, 0]
                == "f")
        #expect(
            try connection.query(
                "SELECT revocation_percentage IS NULL FROM analytics.transactions_as_of($1::timestamptz)", [instant])[
                    0, 0] == "t")
        #expect(try connection.query("SELECT is_in_billing_retry FROM analytics.renewal_infos")[0, 0] == "t")
    }
}
