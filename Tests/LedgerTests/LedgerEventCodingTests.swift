import JSON
import Testing

@testable import Ledger

@Suite struct LedgerEventCodingTests {
    @Test func everyFieldNameIsFoundAndNoOtherName() {
        for field in EventField.allCases {
            #expect(EventField.lookup(field.name) == field)
            // Same length, same first, middle and last byte: only the full compare tells them apart.
            var bytes = Array(field.name.utf8)
            if bytes.count > 3 {
                bytes[1] = bytes[1] == UInt8(ascii: "Z") ? UInt8(ascii: "Y") : UInt8(ascii: "Z")
                #expect(EventField.lookup(String(decoding: bytes, as: UTF8.self)) == nil)
            }
            #expect(EventField.lookup(field.name + "x") == nil)
        }
        #expect(EventField.lookup("") == nil)
    }

    static let full = Transaction(
        transactionId: "2000000002", originalTransactionId: "2000000001", productId: F.monthly,
        bundleId: "com.example.game", type: "Auto-Renewable Subscription", purchaseDate: F.t0,
        originalPurchaseDate: F.t0 - F.month, expiresDate: F.t0 + F.month, quantity: 1,
        inAppOwnershipType: "FAMILY_SHARED", signedDate: F.t0 + 5, revocationDate: F.t0 + 6, revocationReason: 1,
        revocationType: "REFUND_PRORATED", revocationPercentage: 50_000, isUpgraded: true, offerType: 2,
        offerDiscountType: "PAY_AS_YOU_GO",
        offerIdentifier: "promo \"q\"", environment: "Sandbox", appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
        webOrderLineItemId: "2000000000000001", transactionReason: "RENEWAL", price: 4990, currency: "USD",
        storefront: "USA", subscriptionGroupIdentifier: "21000000", appTransactionId: "704289572311524")

    /// A transaction stored before `appTransactionId` was recorded reads back without it and
    /// writes back byte for byte (the log is append-only: old events never change).
    @Test func aTransactionStoredBeforeAppTransactionIdReadsAndWritesTheSame() throws {
        var old = Self.full
        old.appTransactionId = nil
        let stored = LedgerEvent.transactionRecorded(old).encode()
        #expect(!String(decoding: stored, as: UTF8.self).contains("appTransactionId"))
        let read = try LedgerEvent.decode(type: "TransactionRecorded", schemaVersion: 1, data: stored)
        #expect(read == .transactionRecorded(old))
        #expect(read.encode() == stored)
        let withIt = LedgerEvent.transactionRecorded(Self.full).encode()
        #expect(String(decoding: withIt, as: UTF8.self).hasSuffix(#","appTransactionId":"704289572311524"}"#))
        #expect(
            try LedgerEvent.decode(type: "TransactionRecorded", schemaVersion: 1, data: withIt)
                == .transactionRecorded(Self.full))
    }

    /// A period of a monthly plan with a 12-month commitment (API 1.21), and its renewal info.
    static var commitmentPeriod: Transaction {
        var t = full
        t.billingPlanType = "MONTHLY"
        t.commitment = Commitment(
            billingPeriodNumber: 3, totalBillingPeriods: 12, commitmentExpiresDate: F.t0 + 10 * F.month,
            commitmentPrice: 119_880)
        return t
    }

    static var commitmentRenewal: RenewalInfo {
        var r = F.renewal(signed: F.t0)
        r.renewalBillingPlanType = "MONTHLY"
        r.commitmentRenewal = CommitmentRenewal(
            commitmentAutoRenewStatus: 0, commitmentAutoRenewProductId: F.monthly,
            commitmentRenewalBillingPlanType: "MONTHLY", commitmentRenewalDate: F.t0 + 10 * F.month,
            commitmentRenewalPrice: 9_990)
        return r
    }

    static let events: [LedgerEvent] = [
        .transactionRecorded(full),
        .transactionRecorded(commitmentPeriod),
        .renewalInfoRecorded(commitmentRenewal),
        .renewalInfoRecorded(RenewalTermsTests.terms),
        .transactionRecorded(F.consumable("5000")),
        .renewalInfoRecorded(
            RenewalInfo(
                originalTransactionId: "2000000001", productId: F.monthly, autoRenewProductId: F.yearly,
                autoRenewStatus: 1,
                isInBillingRetryPeriod: true, gracePeriodExpiresDate: F.t0 + 9, expirationIntent: 2,
                signedDate: F.t0 + 7,
                environment: "Sandbox", renewalDate: F.t0 + 8, offerType: 3, priceIncreaseStatus: 0,
                recentSubscriptionStartDate: F.t0 - F.month)),
        .renewalInfoRecorded(F.renewal(signed: F.t0)),
        .notificationReceived(
            NotificationFact(
                notificationUUID: "592751ef", notificationType: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD",
                signedDate: F.t0, environment: "Production", originalTransactionId: "2000000001",
                transactionId: "2000000002")),
        .notificationReceived(F.note("TEST", signed: F.t0, otid: nil)),
        .notificationReceived(
            NotificationFact(
                notificationUUID: "a1b2c3d4", notificationType: "RESCIND_CONSENT", signedDate: F.t0,
                environment: "Sandbox", appTransactionId: "704289572311524")),
        .chainClaimed(userId: "u-1", originalTransactionId: "2000000001", from: nil, at: F.t0),
        .chainClaimed(userId: "u-1", originalTransactionId: "2000000001", from: "u-2", at: F.t0),
        .chainReleased(userId: "u-2", originalTransactionId: "2000000001", to: "u-1", at: F.t0),
        .balanceDebited(
            userId: "u-1", currency: "coins", amount: 30, idempotencyKey: "order-881", reason: "sword",
            balanceAfter: -5, at: F.t0),
        .balanceCredited(
            userId: "u-1", currency: "coins", amount: 50, idempotencyKey: "gift", reason: "sorry", at: F.t0),
        .entitlementGranted(userId: "u-1", entitlement: "pro", reason: "support", expiresAt: F.t0 + F.day, at: F.t0),
        .entitlementGranted(userId: "u-1", entitlement: "pro", reason: "support", expiresAt: nil, at: F.t0),
        .entitlementRevoked(userId: "u-1", entitlement: "pro", reason: "abuse", at: F.t0),
        .consumptionAnswered(
            ConsumptionAnswer(
                notificationUUID: "0f6b2c1e", transactionId: "5000", originalTransactionId: "5000",
                environment: "Sandbox", customerConsented: true, sampleContentProvided: false,
                deliveryStatus: "DELIVERED", consumptionPercentage: 30000, refundPreference: "DECLINE",
                outcome: .accepted, attempt: 1, at: F.t0)),
        .consumptionAnswered(
            ConsumptionAnswer(
                notificationUUID: "0f6b2c1e", transactionId: "5000", originalTransactionId: "5000", environment: nil,
                customerConsented: false, sampleContentProvided: true, deliveryStatus: "UNDELIVERED_OTHER",
                consumptionPercentage: nil, refundPreference: nil, outcome: .unavailable,
                appleErrorCode: 5_000_000, detail: "HTTP 503 \"busy\"", attempt: 3, at: F.t0)),
        .retentionAnswered(
            RetentionAnswer(
                requestIdentifier: "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9", originalTransactionId: "2000000001",
                productId: "com.example.monthly", userLocale: "en-US", environment: "Sandbox", signedDate: F.t0,
                bundleId: "com.example", tenureMonths: 7, ruleIndex: 2, answer: .promotionalOffer,
                messageIdentifier: "c3d4e5f6-a789-4123-c3d4-e5f6a7890123", offerIdentifier: "stay50", at: F.t0)),
        .retentionAnswered(
            RetentionAnswer(
                requestIdentifier: "r", originalTransactionId: "2000000001", productId: "p", userLocale: "de",
                environment: "Production", signedDate: F.t0, bundleId: "b", tenureMonths: 0, ruleIndex: nil,
                answer: .none, at: F.t0)),
        .renewalExtensionRequested(
            RenewalExtension(
                originalTransactionId: "2000000001", environment: "Production", extendByDays: 7, extendReasonCode: 3,
                requestIdentifier: "outage-2026-12", outcome: .accepted, effectiveDate: F.t0 + F.day,
                webOrderLineItemId: "2000000000000001", at: F.t0)),
        .renewalExtensionRequested(
            RenewalExtension(
                originalTransactionId: "2000000001", environment: nil, extendByDays: 90, extendReasonCode: 0,
                requestIdentifier: "r", outcome: .rejected, appleErrorCode: 4_000_009, detail: "too many", at: F.t0)),
        .promotionalGranted(
            PromotionalGrant(
                userId: "u-1", grantId: "grt_0123456789abcdef0123456789abcdef", entitlement: "pro",
                expiresAt: F.t0 + 7 * F.day, duration: "P7D", reason: "sorry about the outage",
                idempotencyKey: "ticket-42", at: F.t0)),
        .promotionalGranted(
            PromotionalGrant(
                userId: "u-1", grantId: "grt_ffffffffffffffffffffffffffffffff", entitlement: "pro",
                expiresAt: F.t0 + F.day, duration: nil, reason: "", idempotencyKey: nil, at: F.t0)),
        .promotionalRevoked(
            PromotionalRevocation(
                userId: "u-1", grantId: "grt_0123456789abcdef0123456789abcdef", entitlement: "pro", at: F.t0)),
        .appAccountTokenRegistered(
            userId: "u-1", appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", minted: true, at: F.t0),
        .appAccountTokenRegistered(
            userId: "u-1", appAccountToken: "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f", minted: false, at: F.t0),
        .appleAccountShared(userId: "u-2", appTransactionId: "704289572311524", sharedWith: "u-1", at: F.t0),
        .consentRescinded(userId: "u-2", appTransactionId: "704289572311524", at: F.t0),
        .aliasMerged(userId: "u-1", alias: "anon-1", moved: AliasMergeDecisionTests.anonymous, at: F.t0),
        .mergedInto(userId: "anon-1", target: "u-1", at: F.t0),
        .subjectErased(userId: "s_0123456789abcdef0123456789abcdef", at: F.t0),
    ]

    /// The log is append-only: an admin grant stored before promotional grants existed (no
    /// grantId) still reads back as the same event, and folds as it did.
    @Test func anEntitlementGrantStoredBeforeGrantIdsReadsTheSame() throws {
        let stored = Array(#"{"userId":"u-1","entitlement":"pro","reason":"support","expiresAt":1000,"at":10}"#.utf8)
        let event = try LedgerEvent.decode(type: "EntitlementGranted", schemaVersion: 1, data: stored)
        #expect(
            event == .entitlementGranted(userId: "u-1", entitlement: "pro", reason: "support", expiresAt: 1000, at: 10))
        let account = Account.fold([event])
        #expect(account.grants["pro"] == AdminGrant(reason: "support", expiresAt: 1000, at: 10))
        #expect(account.promotions.isEmpty)
    }

    @Test(arguments: events)
    func everyEventSurvivesARoundTrip(event: LedgerEvent) throws {
        let bytes = event.encode()
        let decoded = try LedgerEvent.decode(type: event.typeName, schemaVersion: event.schemaVersion, data: bytes)
        #expect(decoded == event)
    }

    @Test func aReusedDecoderGivesWhatDecodeGives() throws {
        var decoder = LedgerEventDecoder()
        for event in Self.events + Self.events.reversed() {
            let bytes = event.encode()
            let decoded = try bytes.withUnsafeBufferPointer { data in
                try decoder.decode(type: event.typeName, schemaVersion: event.schemaVersion, data: data)
            }
            #expect(decoded == event)
            #expect(decoded == (try LedgerEvent.decode(type: event.typeName, schemaVersion: 1, data: bytes)))
        }
        #expect(throws: EventDecodingError.self) {
            try Array("{\"userId\":\"u\"}".utf8).withUnsafeBufferPointer { data in
                try decoder.decode(type: "ChainClaimed", schemaVersion: 1, data: data)
            }
        }
        let after = LedgerEvent.entitlementRevoked(userId: "u-1", entitlement: "pro", reason: "abuse", at: F.t0)
        let bytes = after.encode()
        #expect(
            try bytes.withUnsafeBufferPointer { try decoder.decode(type: after.typeName, schemaVersion: 1, data: $0) }
                == after)
    }

    @Test func everyEventTypeIsCovered() {
        #expect(Set(Self.events.map(\.typeName)) == Set(LedgerEvent.typeNames))
    }

    @Test func appleFactsKeepAppleFieldNames() throws {
        let json = try JSONValue.parse(LedgerEvent.transactionRecorded(Self.full).encode())
        #expect(json["originalTransactionId"]?.stringValue == "2000000001")
        #expect(json["inAppOwnershipType"]?.stringValue == "FAMILY_SHARED")
        #expect(json["price"]?.int64Value == 4990)
        #expect(json["expiresDate"]?.int64Value == F.t0 + F.month)
    }

    @Test func unknownTypesAndVersionsAreRefusedByName() {
        #expect(throws: EventDecodingError.self) {
            try LedgerEvent.decode(type: "Nope", schemaVersion: 1, data: Array("{}".utf8))
        }
        #expect(throws: EventDecodingError.self) {
            try LedgerEvent.decode(type: "ChainClaimed", schemaVersion: 2, data: Array("{}".utf8))
        }
        do {
            _ = try LedgerEvent.decode(type: "ChainClaimed", schemaVersion: 1, data: Array(#"{"userId":"u"}"#.utf8))
            Issue.record("decoded without originalTransactionId")
        } catch {
            #expect(error.description.contains("originalTransactionId"))
        }
    }

    @Test func dataAsPostgresJsonbReturnsItDecodes() throws {
        // jsonb reorders keys, adds spaces, and may carry fields a later version added.
        let data = Array(
            #"{"at": 1767225600000, "to": "u-1", "userId": "u-2", "newField": {"x": [1]}, "originalTransactionId": "1000"}"#
                .utf8)
        let event = try LedgerEvent.decode(type: "ChainReleased", schemaVersion: 1, data: data)
        #expect(event == .chainReleased(userId: "u-2", originalTransactionId: "1000", to: "u-1", at: F.t0))
    }

    @Test func escapedStringsTakeTheFullParser() throws {
        let event = LedgerEvent.balanceDebited(
            userId: "u-\"1\"\n", currency: "coins", amount: 1,
            idempotencyKey: "ключ-🔑", reason: "a\\b", balanceAfter: 0, at: 1)
        #expect(try LedgerEvent.decode(type: "BalanceDebited", schemaVersion: 1, data: event.encode()) == event)
    }

    @Test func xcodeFractionalDatesAreTruncated() throws {
        let data = Array(
            #"{"transactionId":"0","originalTransactionId":"0","productId":"p","bundleId":"b","type":"Consumable","purchaseDate":1697679936049.7297,"signedDate":1697679936056.2,"environment":"Xcode"}"#
                .utf8)
        let event = try LedgerEvent.decode(type: "TransactionRecorded", schemaVersion: 1, data: data)
        guard case .transactionRecorded(let t) = event else {
            Issue.record("wrong case")
            return
        }
        #expect(t.purchaseDate == 1_697_679_936_049)
        #expect(t.quantity == 1)
    }
}

@Suite struct LedgerBenchmarkTests {
    @Test func foldThroughputCountsEvents() {
        #expect(LedgerBenchmark.foldThroughput(events: 10_000) > 0)
    }

    @Test func subscriptionDetailListsLatestVersionsAndEveryRenewalInfo() throws {
        var world = World()
        let p = F.period("1000", start: F.t0)
        world.record(p)
        world.record(F.period("1000", start: F.t0, signed: F.t0 + 5, revoked: F.t0 + 5))
        world.record(F.renewal(signed: F.t0 + 2))
        world.record(F.renewal(signed: F.t0 + 1))
        let detail = SubscriptionDetail(
            originalTransactionId: "1000", owner: "u-1", chain: world.chains["1000"]!, at: F.t0 + 6)
        #expect(detail.transactions.map(\.revocationDate) == [F.t0 + 5])
        #expect(detail.renewalInfos.map(\.signedDate) == [F.t0 + 1, F.t0 + 2])
        let json = try JSONValue.parse(detail.jsonBytes())
        #expect(json["state"]?["status"]?.stringValue == "revoked")
        #expect(json["owner"]?.stringValue == "u-1")
    }
}
