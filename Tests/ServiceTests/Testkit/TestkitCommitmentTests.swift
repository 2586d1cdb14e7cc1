import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service
@testable import TestStore

/// `testkit purchase --billing-plan monthly-commitment` (api.md §8, issue: the test store mints
/// each new kind): the periods count up with each DID_RENEW, and cancelling turns off only the
/// commitment's renewal, as Apple's life-cycle guide says.
@Suite(.tags(.database)) struct TestkitCommitmentTests {
    @Test func aCommitmentPlanIsMintedBilledMonthByMonthAndCancelledAsApplesGuideSays() throws {
        let (root, data) = try TestkitTests.initialisedStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        func mint(_ arguments: [String]) throws -> JSONValue {
            try TestkitTests.mintVerified(arguments, root: root, data: data)
        }
        let bought = try mint(
            ["purchase", "--product", TestkitStore.subscription, "--billing-plan", "monthly-commitment"])
        #expect(bought["billingPlanType"]?.stringValue == "MONTHLY")
        #expect(bought["commitmentInfo"]?["billingPeriodNumber"]?.int64Value == 1)
        #expect(bought["commitmentInfo"]?["totalBillingPeriods"]?.int64Value == 12)
        let price = try #require(bought["price"]?.int64Value)
        #expect(bought["commitmentInfo"]?["commitmentPrice"]?.int64Value == 12 * price)

        let renewed = try mint(["notify", "--type", "DID_RENEW", "--original-transaction-id", "2000000001"])
        #expect(renewed["data"]?["transactionInfo"]?["commitmentInfo"]?["billingPeriodNumber"]?.int64Value == 2)

        let cancelled = try mint([
            "notify", "--type", "DID_CHANGE_RENEWAL_STATUS", "--subtype", "AUTO_RENEW_DISABLED",
            "--original-transaction-id", "2000000001",
        ])
        let renewal = try #require(cancelled["data"]?["renewalInfo"])
        #expect(renewal["commitmentInfo"]?["commitmentAutoRenewStatus"]?.int64Value == 0)
        #expect(renewal["autoRenewStatus"]?.int64Value == 1, "the remaining periods are still billed")

        let refused = try OpsBinary.run(
            [
                "testkit", "purchase", "--product", TestkitStore.coins, "--billing-plan", "monthly-commitment",
                "--data-dir", data, "--print",
            ])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--billing-plan is only for auto-renewable subscriptions"), "\(refused.stderr)")
    }
}
