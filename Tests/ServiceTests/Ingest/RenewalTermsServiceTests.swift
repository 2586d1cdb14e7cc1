import EventStore
import Foundation
import JSON
import Ledger
import Schema
import TestSupport
import Testing

@testable import AppStore
@testable import Infrastructure
@testable import Ingest
@testable import Service

/// api.md §8, the renewal info's newer fields end to end: Apple's fixture maps to them, the
/// Customer's subscription shows them as `renewal`, and analytics.renewal_infos holds them, live
/// and (migration 0045) for rows projected before.
@Suite(.tags(.database)) final class RenewalTermsServiceTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    @Test func applesRenewalFixtureMapsToTheNewFields() throws {
        let path = OpsBinary.packageRoot + "/Tests/Fixtures/apple/test-resources/models/signedRenewalInfo.json"
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let renewal = try FactMapping.renewalInfo(JWSRenewalInfo(json: try JSONValue.parse(bytes), rawJSON: bytes))
        #expect(renewal.renewalPrice == 9_990)
        #expect(renewal.currency == "USD")
        #expect(renewal.offerType == 2)
        #expect(renewal.offerDiscountType == "PAY_AS_YOU_GO")
        #expect(renewal.offerPeriod == "P1Y")
        #expect(renewal.offerIdentifier == "abc.123")
        #expect(renewal.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        #expect(renewal.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(renewal.appTransactionId == "71134")
    }

    @Test func theSubscriptionAndAnalyticsShowTheNextRenewalsTerms() throws {
        let now = service.clock.now
        let bought = Mint.transaction(
            "2760001", product: TestService.monthly, purchase: now - 10 * day, expires: now + 20 * day,
            signed: now - 10 * day)
        #expect(try api.purchase("u-terms", Mint.signed(bought)).status == 200)
        #expect(try api.user("u-terms")["subscriptions"]?[0]?["renewal"] == .null)

        var renewal = Mint.renewal(signed: now - day)
        renewal["renewalPrice"] = 4_990
        renewal["currency"] = "EUR"
        renewal["offerType"] = 4
        renewal["offerDiscountType"] = "ONE_TIME"
        renewal["offerPeriod"] = "P1M"
        renewal["offerIdentifier"] = "win.back.1"
        renewal["eligibleWinBackOfferIds"] = .array(["win.back.1", "win.back.2"])
        renewal["appAccountToken"] = "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"
        renewal["appTransactionId"] = "704289572311524"
        let note = Mint.notification("PRICE_CHANGE", transaction: bought, renewal: renewal)
        #expect(try api.notify(note).status == 200)
        let subscription = try api.user("u-terms")["subscriptions"]?[0]
        #expect(
            subscription?["renewal"]
                == .object([
                    "renewalPrice": 4_990, "currency": "EUR", "offerType": 4, "offerDiscountType": "ONE_TIME",
                    "offerPeriod": "P1M", "offerIdentifier": "win.back.1",
                    "eligibleWinBackOfferIds": .array(["win.back.1", "win.back.2"]),
                    "appAccountToken": "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f",
                ]), "\(String(describing: subscription))")
        // Display only: still active and renewing.
        #expect(subscription?["status"] == .string("active") && subscription?["autoRenew"] == .bool(true))

        let connection = try Connection(service.conninfo)
        let columns = """
            SELECT renewal_price_milli || ' ' || currency || ' ' || analytics.offer_type_name(offer_type) || ' '
                || offer_discount_type || ' ' || offer_period || ' ' || offer_identifier || ' '
                || array_to_string(eligible_win_back_offer_ids, '|') || ' ' || app_account_token || ' ' || app_transaction_id
            FROM SOURCE WHERE original_transaction_id = '2760001'
            """
        let expected =
            "4990 EUR win_back ONE_TIME P1M win.back.1 win.back.1|win.back.2 0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f 704289572311524"
        var seen: String?
        try eventually("\(String(describing: seen))", within: 20) {
            seen = try? AnalyticsTests.scalar(
                connection, columns.replacingOccurrences(of: "SOURCE", with: "analytics.renewal_infos"))
            return seen == expected
        }
        #expect(
            try AnalyticsTests.scalar(
                connection,
                columns.replacingOccurrences(of: "SOURCE", with: "analytics.renewal_infos_as_of('infinity')"))
                == expected)
        #expect(
            try AnalyticsTests.scalar(
                connection, columns.replacingOccurrences(of: "SOURCE", with: "analytics.renewal_info_versions"))
                == expected)
    }

    /// Migration 0045 fills the new columns of rows projected before it from the event each row
    /// is (its seq), and catch_up fills them from then on.
    @Test func migration0045FillsTheRowsProjectedBeforeIt() throws {
        let connection = try Connection(try TestDatabase.shared.freshDatabase(migrated: false))
        _ = try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all.filter { $0.version < 45 })
        func append(_ stream: String, _ version: Int, _ type: String, _ data: String) throws {
            try connection.execute(
                "INSERT INTO es.events (stream_id, version, type, data) VALUES ($1, $2, $3, $4::jsonb)",
                [stream, String(version), type, data])
        }
        let plan =
            #"{"transactionId": "p-1", "originalTransactionId": "p-1", "productId": "com.example.yearly", "bundleId": "com.example", "type": "Auto-Renewable Subscription", "purchaseDate": 1767225600000, "expiresDate": 1769817600000, "signedDate": 1767225600000, "environment": "Production", "price": 9990, "currency": "USD", "billingPlanType": "MONTHLY", "billingPeriodNumber": 1, "totalBillingPeriods": 12}"#
        let renewal =
            #"{"originalTransactionId": "p-1", "productId": "com.example.yearly", "autoRenewStatus": 1, "signedDate": 1767225600000, "environment": "Production", "offerType": 3, "renewalPrice": 8990, "currency": "USD", "offerDiscountType": "PAY_AS_YOU_GO", "offerPeriod": "P3M", "offerIdentifier": "code.1", "eligibleWinBackOfferIds": "[\"wb.2\",\"wb.1\"]", "appTransactionId": "7001"}"#
        try append("s-p", 1, "TransactionRecorded", plan)
        try append("s-p", 2, "RenewalInfoRecorded", renewal)
        try append("s-o", 1, "TransactionRecorded", AnalyticsTests.priced("o-1", price: 990))
        #expect(try AnalyticsTests.catchUp(3, on: connection))

        #expect(
            try Migrator.migrate(connection: connection, migrations: SchemaMigrations.all).contains {
                $0.hasPrefix("0045")
            })
        let renewalColumns = """
            SELECT renewal_price_milli || ' ' || currency || ' ' || analytics.offer_type_name(offer_type) || ' '
                || offer_discount_type || ' ' || offer_period || ' ' || offer_identifier || ' '
                || array_to_string(eligible_win_back_offer_ids, '|') || ' ' || coalesce(app_account_token, 'NULL')
                || ' ' || app_transaction_id
            FROM SOURCE
            """
        let expected = "8990 USD offer_code PAY_AS_YOU_GO P3M code.1 wb.2|wb.1 NULL 7001"
        for source in [
            "analytics.renewal_infos", "analytics.renewal_info_versions", "analytics.renewal_infos_as_of('infinity')",
        ] {
            #expect(
                try AnalyticsTests.scalar(connection, renewalColumns.replacingOccurrences(of: "SOURCE", with: source))
                    == expected, "\(source)")
        }
        for source in [
            "analytics.transactions", "analytics.transaction_versions", "analytics.transactions_as_of('infinity')",
        ] {
            #expect(
                try AnalyticsTests.scalar(
                    connection,
                    "SELECT string_agg(transaction_id || ' ' || coalesce(billing_plan_type, 'NULL'), ',' ORDER BY transaction_id) FROM \(source)"
                )
                    == "o-1 NULL,p-1 MONTHLY", "\(source)")
        }
        // A newer renewal info after the migration: catch_up's, with the new fields; without
        // any of them, every new column is NULL.
        try append(
            "s-p", 3, "RenewalInfoRecorded",
            #"{"originalTransactionId": "p-1", "autoRenewStatus": 0, "signedDate": 1767312000000, "environment": "Production"}"#
        )
        #expect(try AnalyticsTests.catchUp(1, on: connection))
        #expect(
            try AnalyticsTests.scalar(
                connection,
                """
                SELECT num_nulls(renewal_price_milli, currency, offer_type, offer_discount_type, offer_period, offer_identifier,
                    eligible_win_back_offer_ids, app_account_token, app_transaction_id) FROM analytics.renewal_infos
                """) == "9")
        #expect(try AnalyticsTests.scalar(connection, "SELECT count(*) FROM analytics.renewal_info_versions") == "2")
        #expect(
            try AnalyticsTests.scalar(
                connection,
                "SELECT string_agg(offer_type || '=' || name, ',' ORDER BY offer_type) FROM analytics.offer_types")
                == "1=introductory,2=promotional,3=offer_code,4=win_back")
        #expect(
            try AnalyticsTests.scalar(
                connection, "SELECT string_agg(offer_discount_type, ',') FROM analytics.offer_discount_types")
                == "FREE_TRIAL,PAY_AS_YOU_GO,PAY_UP_FRONT,ONE_TIME")
    }
}
