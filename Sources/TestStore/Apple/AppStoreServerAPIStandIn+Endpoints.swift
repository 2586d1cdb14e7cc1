import AppStore
import Foundation
import JSON
import Synchronization

/// The stand-in's endpoints, one answer per Server API call it serves, and their helpers.
extension AppStoreServerAPIStandIn {
    func history(_ id: String, _ query: [String: String], _ now: Int64) -> Answer {
        let (all, pageSize) = state.withLock { ($0.transactions, $0.historyPageSize) }
        guard let customer = all.first(where: { Self.matches($0, id) })?.customer else { return Self.notFound }
        var list = all.filter { $0.customer == customer }
        if let start = query["startDate"].flatMap(Int64.init) {
            list = list.filter { ($0.payload.millis("purchaseDate") ?? 0) >= start }
        }
        if let end = query["endDate"].flatMap(Int64.init) {
            list = list.filter { ($0.payload.millis("purchaseDate") ?? 0) < end }
        }
        if let product = query["productId"] { list = list.filter { $0.payload.string("productId") == product } }
        if let type = query["productType"] { list = list.filter { Self.productType($0.payload) == type } }
        if let group = query["subscriptionGroupIdentifier"] {
            list = list.filter { $0.payload.string("subscriptionGroupIdentifier") == group }
        }
        if let ownership = query["inAppOwnershipType"] {
            list = list.filter { $0.payload.string("inAppOwnershipType") == ownership }
        }
        if let revoked = query["revoked"] {
            list = list.filter { ($0.payload["revocationDate"] != nil) == (revoked == "true") }
        }
        if query["sort"] == "DESCENDING" { list.reverse() }
        guard let offset = Self.offset(query["revision"], prefix: "rev-", count: list.count) else {
            return Self.error(400, 4_000_005, "Invalid request revision.")
        }
        let end = min(list.count, offset + pageSize)
        var answer: [String: JSONValue] = [
            "revision": .string("rev-\(end)"), "hasMore": .bool(end < list.count), "bundleId": .string(bundleId),
            "environment": .string(environment.rawValue),
            "signedTransactions": .array(list[offset..<end].map { .string($0.signed) }),
        ]
        if let appAppleId { answer["appAppleId"] = .int(appAppleId) }
        return Self.json(200, .object(answer))
    }

    func statuses(_ id: String, _ now: Int64) -> Answer {
        let (all, renewals) = state.withLock { ($0.transactions, $0.renewals) }
        guard let customer = all.first(where: { Self.matches($0, id) })?.customer else { return Self.notFound }
        // Each chain's latest period (the last added among the latest purchase dates), per group.
        var latest: [String: Stored] = [:]
        var order: [String] = []
        for stored in all
        where stored.customer == customer && stored.payload.string("subscriptionGroupIdentifier") != nil {
            let chain = stored.originalTransactionId
            if let current = latest[chain] {
                if (stored.payload.millis("purchaseDate") ?? 0) >= (current.payload.millis("purchaseDate") ?? 0) {
                    latest[chain] = stored
                }
            } else {
                latest[chain] = stored
                order.append(chain)
            }
        }
        var groups: [String: [JSONValue]] = [:]
        var groupOrder: [String] = []
        for chain in order {
            guard let stored = latest[chain], let group = stored.payload.string("subscriptionGroupIdentifier") else {
                continue
            }
            let renewal = renewals[chain]
            var entry: [String: JSONValue] = [
                "originalTransactionId": .string(chain), "signedTransactionInfo": .string(stored.signed),
                "status": .int(Int64(renewal?.status ?? Self.status(stored.payload, now))),
            ]
            if let renewal { entry["signedRenewalInfo"] = .string(renewal.signed) }
            if groups[group] == nil { groupOrder.append(group) }
            groups[group, default: []].append(.object(entry))
        }
        var answer: [String: JSONValue] = [
            "environment": .string(environment.rawValue), "bundleId": .string(bundleId),
            "data": .array(
                groupOrder.map { group in
                    .object([
                        "subscriptionGroupIdentifier": .string(group), "lastTransactions": .array(groups[group] ?? []),
                    ])
                }),
        ]
        if let appAppleId { answer["appAppleId"] = .int(appAppleId) }
        return Self.json(200, .object(answer))
    }

    func transactionInfo(_ id: String) -> Answer {
        guard let stored = state.withLock({ $0.transactions.last(where: { $0.transactionId == id }) }) else {
            return Self.notFound
        }
        return Self.json(200, ["signedTransactionInfo": .string(stored.signed)])
    }

    /// Look Up Order ID: an unknown order is no error for Apple, but 200 with status 1.
    func orderLookup(_ orderId: String) -> Answer {
        let list = state.withLock { $0.transactions.filter { $0.orderId != nil && $0.orderId == orderId } }
        return Self.json(
            200,
            [
                "status": .int(list.isEmpty ? 1 : 0), "signedTransactions": .array(list.map { .string($0.signed) }),
            ])
    }

    func consumption(_ id: String, _ body: [UInt8]) -> Answer {
        guard state.withLock({ $0.transactions.contains { $0.transactionId == id } }) else { return Self.notFound }
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else {
            return Self.error(400, 4_000_000, "Bad request.")
        }
        guard json["customerConsented"]?.boolValue == true else {
            return Self.error(400, 4_000_035, "Invalid customer consented.")
        }
        guard json["sampleContentProvided"]?.boolValue != nil else {
            return Self.error(400, 4_000_041, "Invalid sample content provided.")
        }
        let delivery: Set<String> = [
            "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
            "UNDELIVERED_OTHER",
        ]
        guard let status = json["deliveryStatus"]?.stringValue, delivery.contains(status) else {
            return Self.error(400, 4_000_036, "Invalid delivery status.")
        }
        if let percentage = json["consumptionPercentage"] {
            guard let value = percentage.int64Value, (0...100_000).contains(value) else {
                return Self.error(400, 4_000_000, "Bad request.")
            }
        }
        return Answer(status: 202, headers: [:], body: [], hang: false)
    }

    func notificationHistory(_ query: [String: String], _ body: [UInt8], _ now: Int64) -> Answer {
        guard let json = try? JSONValue.parse(body), json.objectValue != nil,
            let start = json["startDate"]?.int64Value, let end = json["endDate"]?.int64Value
        else { return Self.error(400, 4_000_015, "Invalid start date.") }
        guard start < end else { return Self.error(400, 4_000_013, "Start date after end date.") }
        guard start >= now - 180 * 86_400_000 else { return Self.error(400, 4_000_012, "Start date too far in past.") }
        let (all, pageSize) = state.withLock { ($0.notifications, $0.notificationPageSize) }
        var list = all.filter {
            let signed = $0.payload.millis("signedDate") ?? 0
            return signed >= start && signed < end
        }
        if let type = json["notificationType"]?.stringValue {
            list = list.filter { $0.payload.string("notificationType") == type }
        }
        if let subtype = json["notificationSubtype"]?.stringValue {
            list = list.filter { $0.payload.string("subtype") == subtype }
        }
        if let transactionId = json["transactionId"]?.stringValue {
            list = list.filter { notification in
                guard let signed = notification.payload["data"]?["signedTransactionInfo"]?.stringValue,
                    let transaction = Self.payload(signed)
                else { return false }
                return transaction.string("transactionId") == transactionId
                    || transaction.string("originalTransactionId") == transactionId
            }
        }
        if json["onlyFailures"]?.boolValue == true {
            list = list.filter { !$0.sendAttempts.contains { $0.sendAttemptResult == "SUCCESS" } }
        }
        guard let offset = Self.offset(query["paginationToken"], prefix: "page-", count: list.count) else {
            return Self.error(400, 4_000_014, "Invalid pagination token.")
        }
        let stop = min(list.count, offset + pageSize)
        var answer: [String: JSONValue] = [
            "hasMore": .bool(stop < list.count),
            "notificationHistory": .array(
                list[offset..<stop].map { notification in
                    .object([
                        "signedPayload": .string(notification.signedPayload),
                        "sendAttempts": .array(notification.sendAttempts.map(Self.attempt)),
                    ])
                }),
        ]
        if stop < list.count { answer["paginationToken"] = .string("page-\(stop)") }
        return Self.json(200, .object(answer))
    }

    func extend(_ originalId: String, _ body: [UInt8], _ now: Int64) -> Answer {
        guard let stored = state.withLock({ $0.transactions.last(where: { $0.originalTransactionId == originalId }) })
        else { return Self.error(404, 4_040_005, "Original transaction id not found.") }
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else {
            return Self.error(400, 4_000_000, "Bad request.")
        }
        guard let days = json["extendByDays"]?.int64Value, (1...90).contains(days) else {
            return Self.error(400, 4_000_009, "Invalid extend by days value.")
        }
        guard let reason = json["extendReasonCode"]?.int64Value, (0...3).contains(reason) else {
            return Self.error(400, 4_000_010, "Invalid extend reason code.")
        }
        guard let identifier = json["requestIdentifier"]?.stringValue, !identifier.isEmpty else {
            return Self.error(400, 4_000_011, "Invalid request identifier.")
        }
        var answer: [String: JSONValue] = [
            "originalTransactionId": .string(originalId), "success": .bool(true),
            "effectiveDate": .int((stored.payload.millis("expiresDate") ?? now) + days * 86_400_000),
        ]
        if let line = stored.payload.string("webOrderLineItemId") { answer["webOrderLineItemId"] = .string(line) }
        return Self.json(200, .object(answer))
    }

    // MARK: Helpers

    /// Where a page starts: 0 without a token, the offset a token this stand-in handed out
    /// (`<prefix><offset>`) names, nil for any other token (Apple answers 400 to those).
    static func offset(_ token: String?, prefix: String, count: Int) -> Int? {
        guard let token else { return 0 }
        guard token.hasPrefix(prefix), let n = Int(token.dropFirst(prefix.count)), (0...count).contains(n) else {
            return nil
        }
        return n
    }

    static func matches(_ stored: Stored, _ id: String) -> Bool {
        stored.transactionId == id || stored.originalTransactionId == id
            || stored.payload.string("appTransactionId") == id
    }

    /// Apple's `productType` filter word for a transaction's `type`.
    static func productType(_ payload: JSONValue) -> String? {
        switch payload.string("type") {
        case "Auto-Renewable Subscription": "AUTO_RENEWABLE"
        case "Non-Renewing Subscription": "NON_RENEWABLE"
        case "Consumable": "CONSUMABLE"
        case "Non-Consumable": "NON_CONSUMABLE"
        default: nil
        }
    }

    /// 1 active, 2 expired, 5 revoked (billing retry and grace need renewal info: `addRenewalInfo(status:)`).
    static func status(_ payload: JSONValue, _ now: Int64) -> Int {
        if payload["revocationDate"] != nil { return 5 }
        return (payload.millis("expiresDate") ?? 0) > now ? 1 : 2
    }

    /// The payload of a compact JWS, unverified (the stand-in serves what it was given).
    static func payload(_ jws: String) -> JSONValue? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var middle = String(parts[1])
        guard let bytes = middle.withUTF8({ Base64.decodeURL($0) }), let json = try? JSONValue.parse(bytes),
            json.objectValue != nil
        else { return nil }
        return json
    }

    static func attempt(_ attempt: SendAttempt) -> JSONValue {
        var object: [String: JSONValue] = [:]
        if let date = attempt.attemptDate { object["attemptDate"] = .int(date) }
        if let result = attempt.sendAttemptResult { object["sendAttemptResult"] = .string(result) }
        return .object(object)
    }

    static let unauthorized = Answer(status: 401, headers: [:], body: [], hang: false)
    static var notFound: Answer { error(404, 4_040_010, "Transaction id not found.") }

    static func error(_ status: Int, _ code: Int64, _ message: String) -> Answer {
        json(status, ["errorCode": .int(code), "errorMessage": .string(message)])
    }

    static func json(_ status: Int, _ value: JSONValue) -> Answer {
        Answer(status: status, headers: ["Content-Type": "application/json"], body: value.serialized(), hang: false)
    }
}
