import Foundation
import JSON
import Ledger
import TestSupport
import Testing

@testable import AppStore
@testable import Infrastructure
@testable import Ingest
@testable import Service

/// api.md §8, commitment plans end to end: Apple's own fixture maps to the domain's fields, and
/// a purchase and a cancellation notification show `commitment` on the Customer's subscription.
@Suite(.tags(.database)) final class CommitmentPlanServiceTests {
    let service: TestService
    let api: ServiceHTTPClient
    let day: Int64 = 86_400_000

    init() throws {
        service = try TestService()
        api = service.client()
    }

    deinit { service.stop() }

    func fixture(_ name: String) throws -> (JSONValue, [UInt8]) {
        let path = OpsBinary.packageRoot + "/Tests/Fixtures/apple/test-resources/models/\(name).json"
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        return (try JSONValue.parse(bytes), bytes)
    }

    @Test func applesFixturesMapToTheCommitmentFields() throws {
        let (transactionJSON, transactionBytes) = try fixture("signedTransaction")
        let transaction = try FactMapping.transaction(JWSTransaction(json: transactionJSON, rawJSON: transactionBytes))
        #expect(transaction.billingPlanType == "MONTHLY")
        #expect(
            transaction.commitment
                == Commitment(
                    billingPeriodNumber: 3, totalBillingPeriods: 12, commitmentExpiresDate: 1_698_150_000_000,
                    commitmentPrice: 119_880))
        let (renewalJSON, renewalBytes) = try fixture("signedRenewalInfo")
        let renewal = try FactMapping.renewalInfo(JWSRenewalInfo(json: renewalJSON, rawJSON: renewalBytes))
        #expect(
            renewal.commitmentRenewal
                == CommitmentRenewal(
                    commitmentAutoRenewStatus: 1, commitmentAutoRenewProductId: "com.example.product.commitment",
                    commitmentRenewalBillingPlanType: "MONTHLY", commitmentRenewalDate: 1_698_149_500_000,
                    commitmentRenewalPrice: 9_990))
    }

    @Test func theSubscriptionShowsItsCommitmentAndACancellationKeepsAccess() throws {
        let now = service.clock.now
        let start = now - 10 * day
        let commitment: JSONValue = .object([
            "billingPeriodNumber": 1, "totalBillingPeriods": 12, "commitmentExpiresDate": .int(start + 360 * day),
            "commitmentPrice": 119_880,
        ])
        let first = Mint.transaction(
            "2750001", product: TestService.monthly, purchase: start, expires: start + 30 * day, signed: start,
            ["billingPlanType": "MONTHLY", "commitmentInfo": commitment, "price": 9_990])
        #expect(try api.purchase("u-commit", Mint.signed(first)).status == 200)
        let subscription = try api.user("u-commit")["subscriptions"]?[0]
        #expect(
            subscription?["commitment"]
                == .object([
                    "period": 1, "periods": 12, "expiresAt": .string(RFC3339.format(start + 360 * day)),
                    "willRenew": true, "price": 119_880,
                ]), "\(String(describing: subscription))")

        // The customer cancels the commitment: Apple keeps the monthly renewal on.
        var renewal = Mint.renewal(signed: now - day)
        renewal["commitmentInfo"] = .object([
            "commitmentAutoRenewStatus": 0, "commitmentAutoRenewProductId": .string(TestService.monthly),
            "commitmentRenewalBillingPlanType": "MONTHLY", "commitmentRenewalDate": .int(start + 360 * day),
            "commitmentRenewalPrice": 119_880,
        ])
        renewal["renewalBillingPlanType"] = "MONTHLY"
        let cancelled = Mint.notification(
            "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: first, renewal: renewal)
        #expect(try api.notify(cancelled).status == 200)
        let after = try api.user("u-commit")
        #expect(after["subscriptions"]?[0]?["commitment"]?["willRenew"] == .bool(false), "\(after)")
        #expect(after["subscriptions"]?[0]?["autoRenew"] == .bool(true))
        #expect(after["entitlements"]?["pro"]?["active"] == .bool(true))
        // No CANCELLATION: the periods left are still billed (the feed settled: everything
        // committed is in it, so an absence means something).
        let feed = try ChangeFeedTests.feed(api, userId: "u-commit", settled: service.conninfo)
        #expect(feed.contains { $0["type"]?.stringValue == "INITIAL_PURCHASE" }, "\(feed)")
        let cancellations = feed.filter { $0["type"]?.stringValue == "CANCELLATION" }
        #expect(cancellations.isEmpty, "\(cancellations)")
        // Every other plan says null.
        let ordinary = Mint.transaction(
            "2750101", product: TestService.monthly, purchase: start, expires: start + 30 * day, signed: start)
        #expect(try api.purchase("u-commit-no", Mint.signed(ordinary)).status == 200)
        #expect(try api.user("u-commit-no")["subscriptions"]?[0]?["commitment"] == .null)
    }
}
