import Foundation
import JSON
import TestSupport
import Testing

@testable import AppStore

/// Apple's unsigned model payloads, signed with a throwaway key and verified in LocalTesting (no chain),
/// decode every documented field.
@Suite struct ModelsTests {
    let verifier: SignedDataVerifier
    let signer: JWSSigner

    init() throws {
        verifier = try SignedDataVerifier(
            trustedRootsDER: [TestVectors.shared.rootDER],
            apps: [AppIdentity(bundleId: "com.example", appAppleId: nil, environments: ["LocalTesting"])])
        signer = try JWSSigner(privateKeyPEM: try Fixture.text("test-resources/certs/testSigningKey.p8"), chainDER: [])
    }

    func signed(_ model: String) throws -> String {
        signer.sign(payload: try Fixture.bytes("test-resources/models/\(model).json"))
    }

    @Test func transactionDecodesEveryField() throws {
        let t = try verifier.verifyTransaction(try signed("signedTransaction"))
        #expect(t.transactionId == "23456")
        #expect(t.originalTransactionId == "12345")
        #expect(t.webOrderLineItemId == "34343")
        #expect(t.productId == "com.example.product")
        #expect(t.subscriptionGroupIdentifier == "55555")
        #expect(t.purchaseDate == 1_698_148_900_000)
        #expect(t.originalPurchaseDate == 1_698_148_800_000)
        #expect(t.expiresDate == 1_698_149_000_000)
        #expect(t.quantity == 1)
        #expect(t.type == "Auto-Renewable Subscription")
        #expect(t.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(t.inAppOwnershipType == "PURCHASED")
        #expect(t.revocationReason == 1)
        #expect(t.revocationDate == 1_698_148_950_000)
        #expect(t.isUpgraded == true)
        #expect(t.offerType == 1)
        #expect(t.offerIdentifier == "abc.123")
        #expect(t.environment == "LocalTesting")
        #expect(t.transactionReason == "PURCHASE")
        #expect(t.storefront == "USA")
        #expect(t.storefrontId == "143441")
        #expect(t.price == 10990)
        #expect(t.currency == "USD")
        #expect(t.offerDiscountType == "PAY_AS_YOU_GO")
        #expect(t.appTransactionId == "71134")
        #expect(t.offerPeriod == "P1Y")
        #expect(t.billingPlanType == "MONTHLY")
        #expect(t.advancedCommerceInfo?["taxCode"]?.stringValue == "TAX_CODE_1")
        #expect(t.commitmentInfo?["totalBillingPeriods"]?.int64Value == 12)
        let revoked = try verifier.verifyTransaction(try signed("signedTransactionWithRevocation"))
        #expect(revoked.revocationType == "REFUND_PRORATED")
        #expect(revoked.revocationPercentage == 50000)
    }

    @Test func renewalInfoDecodesEveryField() throws {
        let r = try verifier.verifyRenewalInfo(try signed("signedRenewalInfo"))
        let json = try JSONValue.parse(try Fixture.bytes("test-resources/models/signedRenewalInfo.json"))
        #expect(r.originalTransactionId == json["originalTransactionId"]?.stringValue)
        #expect(r.expirationIntent == json["expirationIntent"]?.int64Value.map(Int.init))
        #expect(r.autoRenewStatus == json["autoRenewStatus"]?.int64Value.map(Int.init))
        #expect(r.isInBillingRetryPeriod == json["isInBillingRetryPeriod"]?.boolValue)
        #expect(r.gracePeriodExpiresDate == json["gracePeriodExpiresDate"]?.int64Value)
        #expect(r.renewalPrice == json["renewalPrice"]?.int64Value)
        #expect(r.eligibleWinBackOfferIds == json["eligibleWinBackOfferIds"]?.arrayValue?.compactMap(\.stringValue))
        #expect(r.recentSubscriptionStartDate == json["recentSubscriptionStartDate"]?.int64Value)
        #expect(r.environment == "LocalTesting")
    }

    func payload(_ model: String) throws -> NotificationPayload {
        let bytes = try Fixture.bytes("test-resources/models/\(model).json")
        return NotificationPayload(json: try JSONValue.parse(bytes), rawJSON: bytes)
    }

    @Test func notificationBodiesDecode() throws {
        let n = try payload("signedNotification")
        #expect(n.notificationType == "SUBSCRIBED")
        #expect(n.subtype == "INITIAL_BUY")
        #expect(n.data?.status == 1)
        #expect(n.data?.signedTransactionInfo == "signed_transaction_info_value")
        let s = try payload("signedSummaryNotification")
        #expect(s.summary?.storefrontCountryCodes?.isEmpty == false)
        #expect(s.summary?.succeededCount != nil)
        #expect(try payload("signedConsumptionRequestNotification").data?.consumptionRequestReason != nil)
        let token = try payload("signedExternalPurchaseTokenNotification")
        #expect(token.externalPurchaseToken?.externalPurchaseId != nil)
        let rescind = try payload("signedRescindConsentNotification")
        #expect(rescind.appData?.bundleId == "com.example")
        // Apple's model carries placeholder nested values: verifying the notification verifies them too.
        #expect(rejection { _ = try verifier.verifyNotification(try signed("signedNotification")) } == .malformed)
        // Its app transaction is a placeholder too: RESCIND_CONSENT's is verified like the others.
        #expect(rescind.appData?.appAppleId == 41234)
        #expect(rescind.appData?.signedAppTransactionInfo == "signed_app_transaction_info_value")
        #expect(
            rejection { _ = try verifier.verifyNotification(try signed("signedRescindConsentNotification")) }
                == .malformed)
    }

    /// Apple's AppTransaction fixture (the signed app transaction of RESCIND_CONSENT's appData).
    @Test func appTransactionDecodesEveryField() throws {
        let verifier = try SignedDataVerifier(
            trustedRootsDER: [TestVectors.shared.rootDER],
            apps: [AppIdentity(bundleId: "com.example", appAppleId: 531412, environments: ["LocalTesting"])])
        let app = try verifier.verifyAppTransaction(try signed("appTransaction"))
        #expect(app.receiptType == "LocalTesting")
        #expect(app.appAppleId == 531412)
        #expect(app.bundleId == "com.example")
        #expect(app.applicationVersion == "1.2.3")
        #expect(app.versionExternalIdentifier == 512)
        #expect(app.receiptCreationDate == 1_698_148_900_000)
        #expect(app.originalPurchaseDate == 1_698_148_800_000)
        #expect(app.originalApplicationVersion == "1.1.2")
        #expect(app.deviceVerification == "device_verification_value")
        #expect(app.deviceVerificationNonce == "48ccfa42-7431-4f22-9908-7e88983e105a")
        #expect(app.preorderDate == 1_698_148_700_000)
        #expect(app.appTransactionId == "71134")
        #expect(app.originalPlatform == "iOS")
        // Another app's verifier refuses it, as Apple's does (INVALID_APP_IDENTIFIER).
        let other = try SignedDataVerifier(
            trustedRootsDER: [TestVectors.shared.rootDER],
            apps: [AppIdentity(bundleId: "com.example.other", appAppleId: nil, environments: ["LocalTesting"])])
        #expect(throws: VerificationError.self) { _ = try other.verifyAppTransaction(try signed("appTransaction")) }
    }

    @Test func unknownEnumValuesSurvive() throws {
        var json = try JSONValue.parse(try Fixture.bytes("test-resources/models/signedTransaction.json")).objectValue!
        json["type"] = .string("Brand-New Type")
        json["inAppOwnershipType"] = .string("SOMETHING_NEW")
        let t = try verifier.verifyTransaction(signer.sign(payload: JSONValue.object(json).serialized()))
        #expect(t.type == "Brand-New Type")
        #expect(t.inAppOwnershipType == "SOMETHING_NEW")
    }

    @Test func cliPrintsDecodedNotificationWithNestedData() throws {
        let vectors = TestVectors.shared
        let jws = vectors.signedNotification(type: "DID_RENEW", transaction: ["transactionId": "777"], renewal: [:])
        let text = try vectors.verifier().decodedJSON(kind: .notification, jws: jws)
        let parsed = try JSONValue.parse(text)
        #expect(parsed["data"]?["transactionInfo"]?["transactionId"]?.stringValue == "777")
        #expect(parsed["notificationType"]?.stringValue == "DID_RENEW")
        #expect(throws: VerificationError.self) {
            _ = try vectors.verifier().decodedJSON(kind: .transaction, jws: "a.b.c")
        }
    }
}
