import JSON

/// The hosts of the Server API. Sandbox purchases exist only on the Sandbox host. LocalTesting
/// is Apple's libraries' environment for a local stand-in (their `LOCAL_TESTING`): it has no
/// host of Apple's, so its base URL is always given (`iap-ledger testkit apple` serves one).
public enum AppStoreServerEnvironment: String, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    case localTesting = "LocalTesting"
}

/// Get Transaction History v2's filters (sent again, unchanged, with every `revision`).
public struct TransactionHistoryQuery: Sendable, Equatable {
    public var startDate: Int64?
    public var endDate: Int64?
    public var productIds: [String]
    /// AUTO_RENEWABLE, NON_RENEWABLE, CONSUMABLE, NON_CONSUMABLE.
    public var productTypes: [String]
    /// ASCENDING (Apple's default) or DESCENDING, by last modification.
    public var sort: String?
    public var subscriptionGroupIdentifiers: [String]
    public var inAppOwnershipType: String?
    public var revoked: Bool?

    public init(
        startDate: Int64? = nil, endDate: Int64? = nil, productIds: [String] = [], productTypes: [String] = [],
        sort: String? = nil, subscriptionGroupIdentifiers: [String] = [], inAppOwnershipType: String? = nil,
        revoked: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.productIds = productIds
        self.productTypes = productTypes
        self.sort = sort
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.inAppOwnershipType = inAppOwnershipType
        self.revoked = revoked
    }

    var items: [(String, String)] {
        var items: [(String, String)] = []
        if let startDate { items.append(("startDate", String(startDate))) }
        if let endDate { items.append(("endDate", String(endDate))) }
        items += productIds.map { ("productId", $0) }
        items += productTypes.map { ("productType", $0) }
        if let sort { items.append(("sort", sort)) }
        items += subscriptionGroupIdentifiers.map { ("subscriptionGroupIdentifier", $0) }
        if let inAppOwnershipType { items.append(("inAppOwnershipType", inAppOwnershipType)) }
        if let revoked { items.append(("revoked", revoked ? "true" : "false")) }
        return items
    }
}

/// Every page of a customer's history, in Apple's order. The JWS strings are as Apple sent
/// them: the caller verifies each with `SignedDataVerifier` (the client trusts nothing).
public struct TransactionHistory: Sendable, Equatable {
    public var environment: AppStoreServerEnvironment
    public var signedTransactions: [String]
    /// The last page's `revision`: a later call may start from it (incremental sync).
    public var revision: String?
    public var pages: Int

    public init(environment: AppStoreServerEnvironment, signedTransactions: [String], revision: String?, pages: Int) {
        self.environment = environment
        self.signedTransactions = signedTransactions
        self.revision = revision
        self.pages = pages
    }
}

/// Get All Subscription Statuses: per subscription group, each chain's latest transaction and
/// renewal info (JWS, unverified).
public struct SubscriptionStatuses: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public var subscriptionGroupIdentifier: String?
        public var originalTransactionId: String?
        public var status: Int?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?

        public init(
            subscriptionGroupIdentifier: String?, originalTransactionId: String?, status: Int?,
            signedTransactionInfo: String?, signedRenewalInfo: String?
        ) {
            self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
            self.originalTransactionId = originalTransactionId
            self.status = status
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
        }
    }
    public var environment: AppStoreServerEnvironment
    public var items: [Item]

    public init(environment: AppStoreServerEnvironment, items: [Item]) {
        self.environment = environment
        self.items = items
    }
}

/// Get Transaction Info.
public struct TransactionInfo: Sendable, Equatable {
    public var environment: AppStoreServerEnvironment
    public var signedTransactionInfo: String

    public init(environment: AppStoreServerEnvironment, signedTransactionInfo: String) {
        self.environment = environment
        self.signedTransactionInfo = signedTransactionInfo
    }
}

/// Get Notification History's body. Apple wants `startDate`/`endDate` (ms, at most 180 days back).
public struct NotificationHistoryQuery: Sendable, Equatable {
    public var startDate: Int64
    public var endDate: Int64
    public var notificationType: String?
    public var notificationSubtype: String?
    public var transactionId: String?
    public var onlyFailures: Bool?

    public init(
        startDate: Int64, endDate: Int64, notificationType: String? = nil, notificationSubtype: String? = nil,
        transactionId: String? = nil, onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }

    var body: [UInt8] {
        var writer = JSONWriter(capacity: 160)
        writer.beginObject()
        writer.key("startDate")
        writer.int(startDate)
        writer.key("endDate")
        writer.int(endDate)
        if let notificationType {
            writer.key("notificationType")
            writer.string(notificationType)
        }
        if let notificationSubtype {
            writer.key("notificationSubtype")
            writer.string(notificationSubtype)
        }
        if let transactionId {
            writer.key("transactionId")
            writer.string(transactionId)
        }
        if let onlyFailures {
            writer.key("onlyFailures")
            writer.bool(onlyFailures)
        }
        writer.endObject()
        return writer.bytes
    }
}

/// One of Apple's attempts to deliver a notification.
public struct SendAttempt: Sendable, Equatable {
    public var attemptDate: Int64?
    /// SUCCESS, TIMED_OUT, NO_RESPONSE, UNSUCCESSFUL_HTTP_RESPONSE_CODE, … (kept raw: Apple adds values).
    public var sendAttemptResult: String?

    public init(attemptDate: Int64?, sendAttemptResult: String?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }
}

/// One page of Get Notification History. The reconciler keeps `paginationToken` to go on.
public struct NotificationHistoryPage: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public var signedPayload: String
        public var sendAttempts: [SendAttempt]

        public init(signedPayload: String, sendAttempts: [SendAttempt]) {
            self.signedPayload = signedPayload
            self.sendAttempts = sendAttempts
        }
    }
    public var items: [Item]
    public var hasMore: Bool
    public var paginationToken: String?

    public init(items: [Item], hasMore: Bool, paginationToken: String?) {
        self.items = items
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }
}

/// Get Test Notification Status.
public struct TestNotificationStatus: Sendable, Equatable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttempt]

    public init(signedPayload: String?, sendAttempts: [SendAttempt]) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// Send Consumption Information (v2)'s body (`ConsumptionRequest`).
public struct ConsumptionInformation: Sendable, Equatable {
    public var customerConsented: Bool
    public var sampleContentProvided: Bool
    /// DELIVERED, UNDELIVERED_QUALITY_ISSUE, UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE, UNDELIVERED_OTHER.
    public var deliveryStatus: String
    /// Milliunits (0…100000) of the purchase consumed; nil leaves it out (Apple: omit it with GRANT_PRORATED).
    public var consumptionPercentage: Int64?
    /// DECLINE, GRANT_FULL, GRANT_PRORATED.
    public var refundPreference: String?

    public init(
        customerConsented: Bool, sampleContentProvided: Bool, deliveryStatus: String,
        consumptionPercentage: Int64? = nil, refundPreference: String? = nil
    ) {
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }

    var body: [UInt8] {
        var writer = JSONWriter(capacity: 160)
        writer.beginObject()
        writer.key("customerConsented")
        writer.bool(customerConsented)
        writer.key("sampleContentProvided")
        writer.bool(sampleContentProvided)
        writer.key("deliveryStatus")
        writer.string(deliveryStatus)
        if let consumptionPercentage {
            writer.key("consumptionPercentage")
            writer.int(consumptionPercentage)
        }
        if let refundPreference {
            writer.key("refundPreference")
            writer.string(refundPreference)
        }
        writer.endObject()
        return writer.bytes
    }
}

/// Extend a Subscription Renewal Date's body.
public struct RenewalDateExtension: Sendable, Equatable {
    /// 1…90.
    public var extendByDays: Int
    /// 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var extendReasonCode: Int
    /// Apple's idempotency key: the same id again is not a second extension.
    public var requestIdentifier: String

    public init(extendByDays: Int, extendReasonCode: Int, requestIdentifier: String) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }

    var body: [UInt8] {
        var writer = JSONWriter(capacity: 120)
        writer.beginObject()
        writer.key("extendByDays")
        writer.int(extendByDays)
        writer.key("extendReasonCode")
        writer.int(extendReasonCode)
        writer.key("requestIdentifier")
        writer.string(requestIdentifier)
        writer.endObject()
        return writer.bytes
    }
}

/// Apple's answer to an extension.
public struct RenewalDateExtensionResult: Sendable, Equatable {
    public var environment: AppStoreServerEnvironment
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var success: Bool
    public var effectiveDate: Int64?

    public init(
        environment: AppStoreServerEnvironment, originalTransactionId: String?, webOrderLineItemId: String?,
        success: Bool, effectiveDate: Int64?
    ) {
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.success = success
        self.effectiveDate = effectiveDate
    }
}
