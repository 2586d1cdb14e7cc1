import AppStore
import JSON

/// Apple's transaction `type`s, named as `testkit purchase --type` takes them.
public enum TestkitProductType: String, Sendable, CaseIterable {
    case autoRenewable = "auto-renewable"
    case consumable
    case nonConsumable = "non-consumable"
    case nonRenewing = "non-renewing"

    var appleType: String {
        switch self {
        case .autoRenewable: "Auto-Renewable Subscription"
        case .consumable: "Consumable"
        case .nonConsumable: "Non-Consumable"
        case .nonRenewing: "Non-Renewing Subscription"
        }
    }
}

struct TestkitPurchase: Sendable {
    var productId: String
    var type: TestkitProductType
    var expires: TestkitExpiry?
    var quantity: Int = 1
    var appAccountToken: String?
    /// `--billing-plan monthly-commitment`: a monthly plan with a 12-month commitment (API 1.21).
    var commitment = false
}

struct TestkitNotification: Sendable {
    var type: String
    var subtype: String?
    var originalTransactionId: String?
    var transactionId: String?
    var expires: TestkitExpiry?
    /// REFUND only: a prorated refund's `revocationPercentage` (milliunits); nil refunds all of it.
    var percentage: Int64?
}

/// A mistake only the test store's state can reveal (an unknown chain, a renewal of a coin).
struct TestkitError: Error, CustomStringConvertible, Sendable {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Builds the payloads Apple would sign, from the store's state and the time passed in; no I/O.
enum TestkitMinter {
    static let environment = AppStoreEnvironment.localTesting
    static let subscriptionGroup = "21000001"
    static let monthMillis: Int64 = 30 * 86_400_000
    /// What a refund adds to a transaction, and a reversal (or a new period) leaves out.
    static let revocationFields = ["revocationDate", "revocationReason", "revocationType", "revocationPercentage"]

    // MARK: - Purchases

    /// A new transaction (a new chain) and, for an auto-renewable subscription, its renewal info.
    static func purchase(_ purchase: TestkitPurchase, bundleId: String, now: Int64, state: inout TestkitState)
        throws(TestkitError) -> [String: JSONValue]
    {
        let id = state.takeId()
        var payload: [String: JSONValue] = [
            "transactionId": .string(id), "originalTransactionId": .string(id), "bundleId": .string(bundleId),
            "productId": .string(purchase.productId), "purchaseDate": .int(now), "originalPurchaseDate": .int(now),
            "quantity": .int(Int64(purchase.quantity)), "type": .string(purchase.type.appleType),
            "inAppOwnershipType": "PURCHASED", "signedDate": .int(now), "environment": .string(environment),
            "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "currency": "USD",
            "price": .int(price(purchase.type)), "appTransactionId": "704289572311887741",
        ]
        if let token = purchase.appAccountToken { payload["appAccountToken"] = .string(token) }
        if purchase.type == .autoRenewable {
            let expires = purchase.expires?.millis(from: now) ?? TestkitExpiry.adding(.init(month: 1), to: now)
            guard expires > now else { throw TestkitError("--expires must be after now") }
            payload["expiresDate"] = .int(expires)
            payload["webOrderLineItemId"] = .string(webOrderLineItemId(id))
            payload["subscriptionGroupIdentifier"] = .string(subscriptionGroup)
            state.renewals[id] = [
                "originalTransactionId": .string(id), "autoRenewProductId": .string(purchase.productId),
                "productId": .string(purchase.productId), "autoRenewStatus": 1, "isInBillingRetryPeriod": false,
                "signedDate": .int(now), "environment": .string(environment), "recentSubscriptionStartDate": .int(now),
                "renewalDate": .int(expires), "currency": "USD", "renewalPrice": .int(price(.autoRenewable)),
            ]
        }
        if purchase.commitment { startCommitment(&payload, renewal: &state.renewals[id], now: now) }
        state.transactions.append(payload)
        return payload
    }

    static func price(_ type: TestkitProductType) -> Int64 {
        switch type {
        case .autoRenewable: 9_990
        case .consumable: 990
        case .nonConsumable: 4_990
        case .nonRenewing: 19_990
        }
    }

    /// Apple's webOrderLineItemId is its own number space; keep it apart from transaction ids.
    static func webOrderLineItemId(_ transactionId: String) -> String { "9" + transactionId }

    // MARK: - Notifications

    /// The decoded notification payload (nested data signed with `sign`); updates `state` with
    /// what the notification tells (a new period, a revocation, a renewal preference).
    static func notification(
        _ request: TestkitNotification, bundleId: String, now: Int64, uuid: String, state: inout TestkitState,
        sign: (JSONValue) -> String
    ) throws(TestkitError) -> JSONValue {
        if request.type == "RESCIND_CONSENT" {
            return rescindConsent(bundleId: bundleId, now: now, uuid: uuid, sign: sign)
        }
        var data: [String: JSONValue] = [
            "bundleId": .string(bundleId), "bundleVersion": "1.0", "environment": .string(environment),
        ]
        if request.type != "TEST" {
            try describeChain(request, now: now, state: &state, into: &data, sign: sign)
        }
        var payload: [String: JSONValue] = [
            "notificationType": .string(request.type), "notificationUUID": .string(uuid), "version": "2.0",
            "signedDate": .int(now), "data": .object(data),
        ]
        if let subtype = request.subtype { payload["subtype"] = .string(subtype) }
        return .object(payload)
    }

    private static func describeChain(
        _ request: TestkitNotification, now: Int64, state: inout TestkitState, into data: inout [String: JSONValue],
        sign: (JSONValue) -> String
    ) throws(TestkitError) {
        guard let chainId = request.originalTransactionId else {
            throw TestkitError("\(request.type) needs --original-transaction-id")
        }
        let chain = state.chain(chainId)
        guard let latest = chain.last else {
            throw TestkitError("no transaction with originalTransactionId \(chainId) was minted by this test store")
        }
        let isSubscription =
            state.transactions[latest]["type"]?.stringValue == TestkitProductType.autoRenewable.appleType
        guard isSubscription || !subscriptionTypes.contains(request.type) else {
            let kind = state.transactions[latest]["type"]?.stringValue ?? "one-time purchase"
            throw TestkitError("\(request.type) is about auto-renewable subscriptions; \(chainId) is a \(kind)")
        }
        var target = latest
        if let id = request.transactionId {
            guard let found = chain.first(where: { state.transactions[$0]["transactionId"]?.stringValue == id }) else {
                throw TestkitError("transaction \(id) is not in the chain \(chainId)")
            }
            target = found
        }
        guard request.expires == nil || request.type == "DID_RENEW" else {
            throw TestkitError("--expires is only for DID_RENEW (the new period's end)")
        }
        guard request.percentage == nil || request.type == "REFUND" else {
            throw TestkitError("--percentage is only for REFUND (a prorated refund's share)")
        }
        var renewal = state.renewals[chainId]

        switch request.type {
        case "DID_RENEW":
            var next = state.transactions[latest]
            let start = now
            let end: Int64
            if let expires = request.expires {
                end = expires.millis(from: start)
            } else {
                let previous = (next["expiresDate"]?.int64Value ?? now) - (next["purchaseDate"]?.int64Value ?? now)
                end = start + (previous > 0 ? previous : monthMillis)
            }
            guard end > start else { throw TestkitError("--expires must be after now") }
            let id = state.takeId()
            next["transactionId"] = .string(id)
            next["webOrderLineItemId"] = .string(webOrderLineItemId(id))
            next["purchaseDate"] = .int(start)
            next["expiresDate"] = .int(end)
            next["transactionReason"] = "RENEWAL"
            for field in revocationFields { next.removeValue(forKey: field) }
            nextCommitmentPeriod(&next, renewal: renewal, start: start)
            state.transactions.append(next)
            target = state.transactions.count - 1
            renewal?["autoRenewStatus"] = 1
            renewal?["isInBillingRetryPeriod"] = false
            renewal?["renewalDate"] = .int(end)
            renewal?.removeValue(forKey: "gracePeriodExpiresDate")
            renewal?.removeValue(forKey: "expirationIntent")
        case "REFUND", "REVOKE":
            state.transactions[target]["revocationDate"] = .int(now)
            state.transactions[target]["revocationReason"] = 0
            if let percentage = request.percentage {
                // Apple 1.19: a prorated refund names its share; a full one (or a revoke) none.
                state.transactions[target]["revocationType"] = "REFUND_PRORATED"
                state.transactions[target]["revocationPercentage"] = .int(percentage)
            } else {
                state.transactions[target]["revocationType"] =
                    request.type == "REVOKE" ? "FAMILY_REVOKE" : "REFUND_FULL"
                state.transactions[target].removeValue(forKey: "revocationPercentage")
            }
        case "REFUND_REVERSED":
            // Apple re-signs the transaction as it was before the refund: every revocation field goes.
            for field in revocationFields { state.transactions[target].removeValue(forKey: field) }
        case "EXPIRED":
            let intent: Int64 =
                switch request.subtype {
                case "VOLUNTARY": 1
                case "BILLING_RETRY": 2
                case "PRICE_INCREASE": 3
                case "PRODUCT_NOT_FOR_SALE": 4
                default: 5
                }
            renewal?["autoRenewStatus"] = 0
            renewal?["expirationIntent"] = .int(intent)
            renewal?["isInBillingRetryPeriod"] = false
        case "DID_CHANGE_RENEWAL_STATUS" where state.transactions[latest]["commitmentInfo"] != nil:
            // A commitment is cancelled, not its remaining monthly payments (Apple's guide).
            setCommitmentRenewal(request.subtype == "AUTO_RENEW_ENABLED", renewal: &renewal)
        case "DID_CHANGE_RENEWAL_STATUS":
            let enabled = request.subtype == "AUTO_RENEW_ENABLED"
            renewal?["autoRenewStatus"] = enabled ? 1 : 0
            if enabled { renewal?.removeValue(forKey: "expirationIntent") } else { renewal?["expirationIntent"] = 1 }
        case "DID_FAIL_TO_RENEW":
            renewal?["isInBillingRetryPeriod"] = true
            renewal?["expirationIntent"] = 2
            if request.subtype == "GRACE_PERIOD" {
                let expires = state.transactions[latest]["expiresDate"]?.int64Value ?? now
                renewal?["gracePeriodExpiresDate"] = .int(max(expires, now) + 16 * 86_400_000)
            }
        case "CONSUMPTION_REQUEST":
            data["consumptionRequestReason"] = "UNINTENDED_PURCHASE"
        default:
            break  // The chain as it stands, signed again.
        }

        state.transactions[target]["signedDate"] = .int(now)
        let transaction = state.transactions[target]
        data["signedTransactionInfo"] = .string(sign(.object(transaction)))
        if isSubscription, var info = renewal {
            info["signedDate"] = .int(now)
            state.renewals[chainId] = info
            data["signedRenewalInfo"] = .string(sign(.object(info)))
            data["status"] = .int(status(transaction: transaction, renewal: info, now: now))
        }
    }

    // MARK: - Extend a Subscription Renewal Date

    /// What Apple does once it extended a chain's renewal date by `days`: the current period (the
    /// chain's latest transaction, same transactionId) ends `days` later, the renewal info's
    /// `renewalDate` with it, and a RENEWAL_EXTENDED notification tells the new state. Returns
    /// the new expiry and that notification's payload (nested data signed with `sign`), or the
    /// expiry of the first extension when `requestIdentifier` was already granted for the chain
    /// (Apple's idempotency: nothing moves twice; no notification).
    static func extend(
        originalTransactionId chainId: String, days: Int64, requestIdentifier: String, bundleId: String, now: Int64,
        uuid: String, state: inout TestkitState, sign: (JSONValue) -> String
    ) throws(TestkitError) -> (expires: Int64, notification: JSONValue?) {
        let key = chainId + " " + requestIdentifier
        if let granted = state.extensions[key] { return (granted, nil) }
        guard let latest = state.chain(chainId).last,
            state.transactions[latest]["type"]?.stringValue == TestkitProductType.autoRenewable.appleType,
            let expires = state.transactions[latest]["expiresDate"]?.int64Value
        else { throw TestkitError("no auto-renewable chain \(chainId) was minted by this test store") }
        let extended = expires + days * 86_400_000
        state.transactions[latest]["expiresDate"] = .int(extended)
        state.renewals[chainId]?["renewalDate"] = .int(extended)
        state.extensions[key] = extended
        let notification = try notification(
            TestkitNotification(type: "RENEWAL_EXTENDED", originalTransactionId: chainId), bundleId: bundleId, now: now,
            uuid: uuid, state: &state, sign: sign)
        return (extended, notification)
    }

    /// Apple's subscription `status` as of `now`: 1 active, 2 expired, 3 billing retry, 4 grace, 5 revoked.
    static func status(transaction: [String: JSONValue], renewal: [String: JSONValue], now: Int64) -> Int64 {
        if transaction["revocationDate"] != nil { return 5 }
        if let grace = renewal["gracePeriodExpiresDate"]?.int64Value, grace > now,
            renewal["isInBillingRetryPeriod"]?.boolValue == true
        {
            return 4
        }
        if renewal["isInBillingRetryPeriod"]?.boolValue == true { return 3 }
        if let expires = transaction["expiresDate"]?.int64Value, expires > now { return 1 }
        return 2
    }
}
