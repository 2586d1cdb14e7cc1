import AppStore
import Foundation
import JSON

/// The answers of a verifyReceipt stand-in for the test store (`iap-ledger testkit apple`): the
/// request and response of Apple's `POST /verifyReceipt` (docs/FORMATS.md §3), and Apple's checks in
/// Apple's order: a body that is not JSON 21000; `receipt-data` that is not a receipt 21002; a
/// receipt whose CMS signature does not lead to the trusted root 21003; a `password` that is
/// not the app's shared secret (or none, for a receipt with a subscription) 21004.
///
/// What it answers comes from the receipt itself (Apple answers from its servers): `in_app`
/// and, for a receipt with a subscription, `latest_receipt_info`, `latest_receipt` and
/// `pending_renewal_info` (`renewal` tells what the store knows of a chain's renewal).
/// No I/O: the caller serves it over HTTP.
public struct VerifyReceiptStandIn: Sendable {
    /// What the store knows of one subscription chain's next renewal.
    public struct Renewal: Sendable, Equatable {
        public var autoRenewProductId: String?
        public var autoRenewStatus: Bool
        public var expirationIntent: Int?
        public var isInBillingRetryPeriod: Bool?
        public var gracePeriodExpiresDate: Int64?

        public init(
            autoRenewProductId: String? = nil, autoRenewStatus: Bool = true, expirationIntent: Int? = nil,
            isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDate: Int64? = nil
        ) {
            self.autoRenewProductId = autoRenewProductId
            self.autoRenewStatus = autoRenewStatus
            self.expirationIntent = expirationIntent
            self.isInBillingRetryPeriod = isInBillingRetryPeriod
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
        }
    }

    public let trustedRootsDER: [[UInt8]]
    /// The shared secret of each app it answers for, by bundle id (nil: the app has none).
    public let sharedSecrets: [String: String?]
    /// The `environment` it answers: the environment of the data the store signs.
    public let environment: String

    public init(trustedRootsDER: [[UInt8]], sharedSecrets: [String: String?], environment: String) {
        self.trustedRootsDER = trustedRootsDER
        self.sharedSecrets = sharedSecrets
        self.environment = environment
    }

    /// The JSON answer to one request body (HTTP 200 in every case, as Apple's).
    public func answer(_ body: [UInt8], now: Int64, renewal: (String) -> Renewal? = { _ in nil }) -> JSONValue {
        guard let request = try? JSONValue.parse(body), request.objectValue != nil else { return Self.status(21000) }
        guard let receipt = request["receipt-data"]?.stringValue else { return Self.status(21002) }
        let password = request["password"]?.stringValue
        let excludeOld = request["exclude-old-transactions"]?.boolValue ?? false

        let content: [UInt8]
        do {
            content = try AppReceiptSignature.verifiedContent(receipt, trustedRootsDER: trustedRootsDER)
        } catch {
            switch error {
            case .malformed: return Self.status(21002)
            case .notAuthenticated: return Self.status(21003)
            }
        }
        // Signed by the store, yet not Apple's receipt format: Apple would not have signed it.
        guard let contents = try? AppReceiptContents(der: content) else { return Self.status(21002) }

        let subscriptions = contents.purchases.filter { $0.expiresDate != nil || $0.webOrderLineItemId != nil }
        let secret = sharedSecrets[contents.bundleId] ?? nil
        if let password {
            guard password == secret else { return Self.status(21004) }
        } else if secret != nil && !subscriptions.isEmpty {
            return Self.status(21004)
        }

        let inApp = contents.purchases.sorted {
            ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId)
        }
        let created = contents.creationDate ?? now
        var receiptJSON: [String: JSONValue] = [
            "receipt_type": .string(environment), "adam_id": 0, "app_item_id": 0, "download_id": 0,
            "version_external_identifier": 0, "bundle_id": .string(contents.bundleId),
            "application_version": .string(contents.appVersion),
            "original_application_version": .string(contents.originalAppVersion ?? contents.appVersion),
            "in_app": .array(inApp.map(Self.entry)),
        ]
        Self.date(&receiptJSON, "receipt_creation_date", created)
        Self.date(&receiptJSON, "request_date", now)
        Self.date(&receiptJSON, "original_purchase_date", inApp.map(\.originalPurchaseDate).min() ?? created)
        var answer: [String: JSONValue] = [
            "status": 0, "environment": .string(environment), "receipt": .object(receiptJSON),
        ]
        guard !subscriptions.isEmpty else { return .object(answer) }

        // latest_receipt_info: newest first, as Apple sends it; with exclude-old-transactions
        // only each subscription chain's latest period.
        var latest = inApp.reversed() as [AppReceiptContents.Purchase]
        if excludeOld {
            var seen: Set<String> = []
            latest = latest.filter { purchase in
                guard purchase.expiresDate != nil || purchase.webOrderLineItemId != nil else { return true }
                return seen.insert(purchase.originalTransactionId).inserted
            }
        }
        answer["latest_receipt_info"] = .array(latest.map(Self.entry))
        answer["latest_receipt"] = .string(receipt)
        var pending: [JSONValue] = []
        var chains: Set<String> = []
        for purchase in subscriptions.sorted(by: { $0.purchaseDate > $1.purchaseDate })
        where chains.insert(purchase.originalTransactionId).inserted {
            let known = renewal(purchase.originalTransactionId) ?? Renewal(autoRenewProductId: purchase.productId)
            var info: [String: JSONValue] = [
                "original_transaction_id": .string(purchase.originalTransactionId),
                "product_id": .string(purchase.productId),
                "auto_renew_product_id": .string(known.autoRenewProductId ?? purchase.productId),
                "auto_renew_status": known.autoRenewStatus ? "1" : "0",
            ]
            if let intent = known.expirationIntent { info["expiration_intent"] = .string(String(intent)) }
            if let retrying = known.isInBillingRetryPeriod { info["is_in_billing_retry_period"] = retrying ? "1" : "0" }
            if let grace = known.gracePeriodExpiresDate { Self.date(&info, "grace_period_expires_date", grace) }
            pending.append(.object(info))
        }
        answer["pending_renewal_info"] = .array(pending)
        return .object(answer)
    }

    static func status(_ code: Int64) -> JSONValue {
        .object(["status": .int(code)])
    }

    /// One `in_app` / `latest_receipt_info` entry: every value a string, as Apple sends them.
    static func entry(_ purchase: AppReceiptContents.Purchase) -> JSONValue {
        var entry: [String: JSONValue] = [
            "quantity": .string(String(purchase.quantity)), "product_id": .string(purchase.productId),
            "transaction_id": .string(purchase.transactionId),
            "original_transaction_id": .string(purchase.originalTransactionId),
            "is_trial_period": "false", "in_app_ownership_type": "PURCHASED",
        ]
        date(&entry, "purchase_date", purchase.purchaseDate)
        date(&entry, "original_purchase_date", purchase.originalPurchaseDate)
        if let expires = purchase.expiresDate { date(&entry, "expires_date", expires) }
        if let line = purchase.webOrderLineItemId { entry["web_order_line_item_id"] = .string(String(line)) }
        if purchase.expiresDate != nil || purchase.webOrderLineItemId != nil {
            entry["is_in_intro_offer_period"] = purchase.isInIntroOfferPeriod == true ? "true" : "false"
        }
        if let cancelled = purchase.cancellationDate {
            date(&entry, "cancellation_date", cancelled)
            entry["cancellation_reason"] = "0"
        }
        return .object(entry)
    }

    /// Apple's three spellings of a date: `NAME` "2026-12-29 10:00:00 Etc/GMT", `NAME_ms`
    /// milliseconds as a string, `NAME_pst` in America/Los_Angeles.
    static func date(_ object: inout [String: JSONValue], _ name: String, _ millis: Int64) {
        object[name + "_ms"] = .string(String(millis))
        let date = Date(timeIntervalSince1970: Double(millis) / 1000)
        object[name] = .string(format(date, zone: TimeZone(identifier: "UTC"), label: "Etc/GMT"))
        if let pacific = TimeZone(identifier: "America/Los_Angeles") {
            object[name + "_pst"] = .string(format(date, zone: pacific, label: "America/Los_Angeles"))
        }
    }

    private static func format(_ date: Date, zone: TimeZone?, label: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone ?? TimeZone(secondsFromGMT: 0)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date) + " " + label
    }
}
