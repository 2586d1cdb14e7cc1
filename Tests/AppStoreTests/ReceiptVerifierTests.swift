import Foundation
import JSON
import TestSupport
import Testing

@testable import AppStore

/// verifyReceipt against a stand-in server on loopback.
@Suite struct ReceiptVerifierTests {
    static let validSandbox = """
        {"status":0,"environment":"Sandbox","receipt":{"bundle_id":"com.example","request_date_ms":"1700000000000",
        "in_app":[{"transaction_id":"1","product_id":"old"}]},
        "latest_receipt":"BASE64==",
        "latest_receipt_info":[{"quantity":"1","product_id":"com.example.monthly","transaction_id":"1000000001",
        "original_transaction_id":"1000000000","purchase_date_ms":"1699990000000","original_purchase_date_ms":"1699000000000",
        "expires_date_ms":"1702590000000","web_order_line_item_id":"2000000001","is_trial_period":"false",
        "is_in_intro_offer_period":"false","in_app_ownership_type":"PURCHASED","subscription_group_identifier":"21000001",
        "cancellation_date_ms":"1700500000000","cancellation_reason":"1","is_upgraded":"true"}],
        "pending_renewal_info":[{"auto_renew_product_id":"com.example.yearly","auto_renew_status":"0","expiration_intent":"1",
        "is_in_billing_retry_period":"0","original_transaction_id":"1000000000","product_id":"com.example.monthly",
        "price_consent_status":"1","grace_period_expires_date_ms":"1702600000000"}]}
        """
    /// A receipt of the real shape (the verifier refuses anything else before posting).
    static let receipt = TestReceipts.receipt()
    static let askedAt: Int64 = 1_700_000_123_456

    static let validProduction =
        #"{"status":0,"environment":"Production","receipt":{"bundle_id":"com.example","in_app":[]}}"#

    func verifier(_ server: StandInServer, retries: Int = 3) -> ReceiptVerifier {
        ReceiptVerifier(
            productionURL: server.url("/prod"), sandboxURL: server.url("/sandbox"),
            timeout: 5, maxRetries: retries, backoff: 0.01)
    }

    func error(_ body: () throws(ReceiptError) -> Void) -> ReceiptError? {
        do {
            try body()
            return nil
        } catch { return error }
    }

    @Test func sandboxReceiptFallsBackOn21007AndMapsEntries() throws {
        let server = try StandInServer(["/prod": [(200, #"{"status":21007}"#)], "/sandbox": [(200, Self.validSandbox)]])
        defer { server.stop() }
        let receipt = try verifier(server).verify(receiptData: Self.receipt, password: "s3cret", askedAt: Self.askedAt)
        #expect(server.hitCount("/prod") == 1)
        #expect(server.hitCount("/sandbox") == 1)
        #expect(receipt.environment == "Sandbox")
        let t = try #require(receipt.transactions.first)
        #expect(receipt.transactions.count == 1)
        #expect(t.transactionId == "1000000001")
        #expect(t.originalTransactionId == "1000000000")
        #expect(t.bundleId == "com.example")
        #expect(t.environment == "Sandbox")
        #expect(t.purchaseDate == 1_699_990_000_000)
        #expect(t.expiresDate == 1_702_590_000_000)
        #expect(t.revocationDate == 1_700_500_000_000)
        #expect(t.revocationReason == 1)
        #expect(t.isUpgraded == true)
        #expect(t.quantity == 1)
        #expect(t.type == "Auto-Renewable Subscription")
        #expect(t.signedDate == 1_700_000_000_000)
        let r = try #require(receipt.renewalInfos.first)
        #expect(r.autoRenewProductId == "com.example.yearly")
        #expect(r.autoRenewStatus == 0)
        #expect(r.expirationIntent == 1)
        #expect(r.isInBillingRetryPeriod == false)
        #expect(r.priceIncreaseStatus == 1)
        #expect(r.gracePeriodExpiresDate == 1_702_600_000_000)
        let sent = try JSONValue.parse(server.requestBodies[0])
        #expect(sent["receipt-data"]?.stringValue == Self.receipt)
        #expect(sent["password"]?.stringValue == "s3cret")
    }

    @Test func productionReceiptSentToSandboxGoesBackOn21008() throws {
        let server = try StandInServer([
            "/prod": [(200, #"{"status":21007}"#), (200, Self.validProduction)],
            "/sandbox": [(200, #"{"status":21008}"#)],
        ])
        defer { server.stop() }
        let receipt = try verifier(server).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
        #expect(receipt.environment == "Production")
        #expect(server.hitCount("/prod") == 2)
        #expect(server.hitCount("/sandbox") == 1)
    }

    @Test func temporaryStatusesAreRetried() throws {
        let server = try StandInServer([
            "/prod": [
                (200, #"{"status":21005}"#), (200, #"{"status":21002}"#), (500, "oops"),
                (200, #"{"status":21104,"is-retryable":true}"#), (200, #"{"status":21009}"#),
                (200, Self.validProduction),
            ]
        ])
        defer { server.stop() }
        let receipt = try verifier(server, retries: 5).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
        #expect(receipt.status == 0)
        #expect(server.hitCount("/prod") == 6)
    }

    @Test func exhaustedRetriesAreUnavailable() throws {
        let server = try StandInServer(["/prod": [(200, #"{"status":21005}"#)]])
        defer { server.stop() }
        guard
            case .unavailable? = error({ () throws(ReceiptError) in
                _ = try verifier(server, retries: 2).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
            })
        else {
            Issue.record("expected unavailable")
            return
        }
        #expect(server.hitCount("/prod") == 3)
    }

    @Test func finalStatusesAreRejected() throws {
        for status in [21003, 21004, 21010, 21000] {
            let server = try StandInServer(["/prod": [(200, #"{"status":\#(status)}"#)]])
            defer { server.stop() }
            #expect(
                error { () throws(ReceiptError) in
                    _ = try verifier(server).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
                }
                    == .rejected(status: status))
            #expect(server.hitCount("/prod") == 1)
        }
        let server = try StandInServer(["/prod": [(200, #"{"status":21199,"is_retryable":false}"#)]])
        defer { server.stop() }
        #expect(
            error { () throws(ReceiptError) in
                _ = try verifier(server).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
            } == .rejected(status: 21199))
    }

    @Test func serverDownIsUnavailable() throws {
        let server = try StandInServer([:])
        server.stop()
        guard
            case .unavailable? = error({ () throws(ReceiptError) in
                _ = try verifier(server, retries: 1).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
            })
        else {
            Issue.record("expected unavailable")
            return
        }
    }

    @Test func malformedJSONIsAMalformedResponse() throws {
        let server = try StandInServer(["/prod": [(200, "<html>not json")]])
        defer { server.stop() }
        let outcome = error({ () throws(ReceiptError) in
            _ = try verifier(server).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
        })
        guard case .malformedResponse? = outcome else {
            Issue.record("expected malformedResponse, got \(String(describing: outcome))")
            return
        }
        let noStatus = try StandInServer(["/prod": [(200, #"{"receipt":{}}"#)]])
        defer { noStatus.stop() }
        guard
            case .malformedResponse? = error({ () throws(ReceiptError) in
                _ = try verifier(noStatus).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
            })
        else {
            Issue.record("expected malformedResponse")
            return
        }
    }

    @Test func anAnswerWithoutRequestDateIsDatedWhenTheCallerAsked() throws {
        let undated =
            #"{"status":0,"environment":"Production","receipt":{"bundle_id":"com.example","in_app":[{"transaction_id":"5","original_transaction_id":"5","product_id":"p","purchase_date_ms":"1699990000000"}]},"pending_renewal_info":[{"original_transaction_id":"5","auto_renew_status":"1"}]}"#
        let server = try StandInServer(["/prod": [(200, undated)]])
        defer { server.stop() }
        let receipt = try verifier(server).verify(receiptData: Self.receipt, askedAt: Self.askedAt)
        #expect(receipt.transactions.first?.signedDate == Self.askedAt)
        #expect(receipt.renewalInfos.first?.signedDate == Self.askedAt)
    }

    @Test func textThatIsNotAReceiptIsNeverPosted() throws {
        let server = try StandInServer(["/prod": [(200, Self.validProduction)]])
        defer { server.stop() }
        for bad in ["!!!not base64!!!", "", "x", "MIIabc+/=", JWSSigner.base64(Array("not der at all".utf8))] {
            guard
                case .notAReceipt? = error({ () throws(ReceiptError) in
                    _ = try verifier(server).verify(receiptData: bad, askedAt: Self.askedAt)
                })
            else {
                Issue.record("\(bad) was not refused locally")
                continue
            }
        }
        #expect(server.hitCount("/prod") == 0)
        #expect(server.hitCount("/sandbox") == 0)
    }
}
