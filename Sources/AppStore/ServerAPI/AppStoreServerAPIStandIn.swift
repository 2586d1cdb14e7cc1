import Foundation
import JSON
import Synchronization

/// Apple's App Store Server API for one environment, without I/O (the caller serves it over
/// HTTP: TestSupport's `AppleServerAPIStandIn` for tests, and later `iap-ledger testkit`), like
/// `VerifyReceiptStandIn`. It checks every request's JWT as Apple does (401, empty body, on any
/// broken rule: see `AppStoreServerTokenCheck`), then answers from the data it was given:
/// transactions (signed by whoever the test trusts; it never re-signs), renewal infos,
/// notifications. It records every request, so tests can assert what was sent.
///
/// A transaction belongs to a customer (`customer:` when added, else its `appTransactionId`,
/// else its `originalTransactionId`); Get Transaction History and Get All Subscription Statuses
/// answer for the customer of the id asked about, as Apple does for an app account.
public final class AppStoreServerAPIStandIn: Sendable {
    /// What a test can make the next requests meet instead of the real answer (after the token check).
    public enum Fault: Sendable, Equatable {
        /// 429 with Apple's 4290000 body and, when given, `Retry-After: seconds`.
        case tooManyRequests(retryAfterSeconds: Int?)
        /// That status (5xx) with Apple's 5000000 body.
        case serverError(status: Int)
        /// Any status and raw body (malformed answers, other errors).
        case raw(status: Int, body: String)
        /// No answer at all: the connection is held until the client gives up (timeouts).
        case hang
    }

    /// One request as received, with what was answered.
    public struct Request: Sendable, Equatable {
        public var method: String
        public var path: String
        public var query: [String: String]
        public var body: [UInt8]
        public var authorization: String?
        public var status: Int
        /// The body as text (assertions on what was sent).
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    /// The answer to one request; `hang` means send nothing.
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: [UInt8]
        public var hang: Bool
    }

    public let environment: AppStoreServerEnvironment
    public let bundleId: String
    public let appAppleId: Int64?
    private let check: AppStoreServerTokenCheck
    private let state = Mutex(State())

    private struct Stored: Sendable {
        var signed: String
        var payload: JSONValue
        var customer: String
        var transactionId: String
        var originalTransactionId: String
    }

    private struct Notification: Sendable {
        var signedPayload: String
        var payload: JSONValue
        var sendAttempts: [SendAttempt]
    }

    private struct State: Sendable {
        var transactions: [Stored] = []
        var renewals: [String: (signed: String, status: Int?)] = [:]
        var notifications: [Notification] = []
        var testNotifications: [String: TestNotificationStatus] = [:]
        var testNotificationOrder: [String] = []
        var faults: [Fault] = []
        var requests: [Request] = []
        var historyPageSize = 20
        var notificationPageSize = 20
    }

    /// - Parameters: the app and key it answers for, as Apple knows them: the issuer id, the key
    ///   id and the key's public half (`AppStoreServerKey.publicKeyPEM`).
    public init(
        environment: AppStoreServerEnvironment, bundleId: String, appAppleId: Int64? = nil, issuerId: String,
        keyId: String, publicKeyPEM: String
    ) throws(AppStoreServerTokenCheck.Refusal) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        check = try AppStoreServerTokenCheck(
            issuerId: issuerId, keyId: keyId, bundleId: bundleId, publicKeyPEM: publicKeyPEM)
    }

    // MARK: Giving it data

    /// Adds a signed transaction (returned as given). `customer` groups it into one history.
    public func addTransaction(_ signedTransaction: String, customer: String? = nil) {
        let payload = Self.payload(signedTransaction) ?? .object([:])
        let id = payload.string("transactionId") ?? ""
        let original = payload.string("originalTransactionId") ?? id
        let owner = customer ?? payload.string("appTransactionId") ?? original
        state.withLock {
            $0.transactions.append(Stored(
                signed: signedTransaction, payload: payload, customer: owner, transactionId: id,
                originalTransactionId: original))
        }
    }

    /// The renewal info of a subscription chain (its `originalTransactionId` is read from it);
    /// `status` (1…5) overrides the one derived from the latest transaction.
    public func addRenewalInfo(_ signedRenewalInfo: String, status: Int? = nil) {
        guard let original = Self.payload(signedRenewalInfo)?.string("originalTransactionId") else { return }
        state.withLock { $0.renewals[original] = (signedRenewalInfo, status) }
    }

    /// A notification Apple "sent" (it appears in Get Notification History by its `signedDate`).
    public func addNotification(_ signedPayload: String, sendAttempts: [SendAttempt] = []) {
        let payload = Self.payload(signedPayload) ?? .object([:])
        state.withLock {
            $0.notifications.append(Notification(signedPayload: signedPayload, payload: payload, sendAttempts: sendAttempts))
        }
    }

    /// Page sizes (Apple: 20 transactions per history page).
    public func setPageSizes(history: Int = 20, notifications: Int = 20) {
        state.withLock {
            $0.historyPageSize = max(1, history)
            $0.notificationPageSize = max(1, notifications)
        }
    }

    /// The next requests (with an acceptable token) meet these, in order, one each.
    public func enqueue(_ faults: [Fault]) { state.withLock { $0.faults += faults } }

    /// What Get Test Notification Status answers for `token` (e.g. after a test delivered it).
    public func setTestNotificationStatus(_ token: String, _ status: TestNotificationStatus) {
        state.withLock { $0.testNotifications[token] = status }
    }

    /// Tokens handed out by Request a Test Notification, oldest first.
    public var testNotificationTokens: [String] { state.withLock { $0.testNotificationOrder } }

    /// Every request received, oldest first.
    public var requests: [Request] { state.withLock { $0.requests } }

    // MARK: Answering

    /// Answers one request. `path` is below the base URL (`/inApps/...`), `query` decoded (the
    /// first value of a repeated name: repeated filters narrow by their first value only).
    public func answer(
        method: String, path: String, query: [String: String], authorization: String?, body: [UInt8], nowMillis: Int64
    ) -> Answer {
        let answer = decide(method: method, path: path, query: query, authorization: authorization, body: body,
                            nowMillis: nowMillis)
        state.withLock {
            $0.requests.append(Request(
                method: method, path: path, query: query, body: body, authorization: authorization,
                status: answer.hang ? 0 : answer.status))
        }
        return answer
    }

    private func decide(
        method: String, path: String, query: [String: String], authorization: String?, body: [UInt8], nowMillis: Int64
    ) -> Answer {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return Self.unauthorized }
        do { try check.check(String(authorization.dropFirst(7)), nowMillis: nowMillis) } catch { return Self.unauthorized }
        if let fault = state.withLock({ $0.faults.isEmpty ? nil : $0.faults.removeFirst() }) {
            switch fault {
            case .tooManyRequests(let seconds):
                var answer = Self.error(429, 4290000, "Rate limit exceeded.")
                if let seconds { answer.headers["Retry-After"] = String(seconds) }
                return answer
            case .serverError(let status): return Self.error(status, 5000000, "An unknown error occurred.")
            case .raw(let status, let text):
                return Answer(status: status, headers: ["Content-Type": "application/json"], body: Array(text.utf8), hang: false)
            case .hang: return Answer(status: 0, headers: [:], body: [], hang: true)
            }
        }
        let segments = path.split(separator: "/").map(String.init)
        switch (method, segments.count >= 3 ? Array(segments.prefix(3)) : segments, segments.count) {
        case ("GET", ["inApps", "v2", "history"], 4): return history(segments[3], query, nowMillis)
        case ("GET", ["inApps", "v1", "subscriptions"], 4): return statuses(segments[3], nowMillis)
        case ("GET", ["inApps", "v1", "transactions"], 4): return transactionInfo(segments[3])
        case ("PUT", ["inApps", "v2", "transactions"], 5) where segments[3] == "consumption":
            return consumption(segments[4], body)
        case ("POST", ["inApps", "v1", "notifications"], 4) where segments[3] == "history":
            return notificationHistory(query, body, nowMillis)
        case ("POST", ["inApps", "v1", "notifications"], 4) where segments[3] == "test":
            let token = UUID().uuidString.lowercased()
            state.withLock {
                $0.testNotifications[token] = TestNotificationStatus(signedPayload: nil, sendAttempts: [])
                $0.testNotificationOrder.append(token)
            }
            return Self.json(200, ["testNotificationToken": .string(token)])
        case ("GET", ["inApps", "v1", "notifications"], 5) where segments[3] == "test":
            guard let status = state.withLock({ $0.testNotifications[segments[4]] }) else {
                return Self.error(404, 4040008, "Test notification not found.")
            }
            var object: [String: JSONValue] = ["sendAttempts": .array(status.sendAttempts.map(Self.attempt))]
            if let payload = status.signedPayload { object["signedPayload"] = .string(payload) }
            return Self.json(200, .object(object))
        case ("PUT", ["inApps", "v1", "subscriptions"], 5) where segments[3] == "extend":
            return extend(segments[4], body, nowMillis)
        default:
            return Self.error(404, 4040000, "Not found.")
        }
    }

    private func history(_ id: String, _ query: [String: String], _ now: Int64) -> Answer {
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
        var offset = 0
        if let revision = query["revision"] {
            guard revision.hasPrefix("rev-"), let n = Int(revision.dropFirst(4)), (0...list.count).contains(n) else {
                return Self.error(400, 4000005, "Invalid request revision.")
            }
            offset = n
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

    private func statuses(_ id: String, _ now: Int64) -> Answer {
        let (all, renewals) = state.withLock { ($0.transactions, $0.renewals) }
        guard let customer = all.first(where: { Self.matches($0, id) })?.customer else { return Self.notFound }
        // Each chain's latest period (the last added among the latest purchase dates), per group.
        var latest: [String: Stored] = [:]
        var order: [String] = []
        for stored in all where stored.customer == customer && stored.payload.string("subscriptionGroupIdentifier") != nil {
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
            guard let stored = latest[chain], let group = stored.payload.string("subscriptionGroupIdentifier") else { continue }
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
            "data": .array(groupOrder.map { group in
                .object(["subscriptionGroupIdentifier": .string(group), "lastTransactions": .array(groups[group] ?? [])])
            }),
        ]
        if let appAppleId { answer["appAppleId"] = .int(appAppleId) }
        return Self.json(200, .object(answer))
    }

    private func transactionInfo(_ id: String) -> Answer {
        guard let stored = state.withLock({ $0.transactions.last(where: { $0.transactionId == id }) }) else {
            return Self.notFound
        }
        return Self.json(200, ["signedTransactionInfo": .string(stored.signed)])
    }

    private func consumption(_ id: String, _ body: [UInt8]) -> Answer {
        guard state.withLock({ $0.transactions.contains { $0.transactionId == id } }) else { return Self.notFound }
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else {
            return Self.error(400, 4000000, "Bad request.")
        }
        guard json["customerConsented"]?.boolValue == true else {
            return Self.error(400, 4000035, "Invalid customer consented.")
        }
        guard json["sampleContentProvided"]?.boolValue != nil else {
            return Self.error(400, 4000041, "Invalid sample content provided.")
        }
        let delivery: Set<String> = [
            "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
            "UNDELIVERED_OTHER",
        ]
        guard let status = json["deliveryStatus"]?.stringValue, delivery.contains(status) else {
            return Self.error(400, 4000036, "Invalid delivery status.")
        }
        if let percentage = json["consumptionPercentage"] {
            guard let value = percentage.int64Value, (0...100_000).contains(value) else {
                return Self.error(400, 4000000, "Bad request.")
            }
        }
        return Answer(status: 202, headers: [:], body: [], hang: false)
    }

    private func notificationHistory(_ query: [String: String], _ body: [UInt8], _ now: Int64) -> Answer {
        guard let json = try? JSONValue.parse(body), json.objectValue != nil,
              let start = json["startDate"]?.int64Value, let end = json["endDate"]?.int64Value
        else { return Self.error(400, 4000015, "Invalid start date.") }
        guard start < end else { return Self.error(400, 4000013, "Start date after end date.") }
        guard start >= now - 180 * 86_400_000 else { return Self.error(400, 4000012, "Start date too far in past.") }
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
        var offset = 0
        if let token = query["paginationToken"] {
            guard token.hasPrefix("page-"), let n = Int(token.dropFirst(5)), (0...list.count).contains(n) else {
                return Self.error(400, 4000014, "Invalid pagination token.")
            }
            offset = n
        }
        let stop = min(list.count, offset + pageSize)
        var answer: [String: JSONValue] = [
            "hasMore": .bool(stop < list.count),
            "notificationHistory": .array(list[offset..<stop].map { notification in
                .object([
                    "signedPayload": .string(notification.signedPayload),
                    "sendAttempts": .array(notification.sendAttempts.map(Self.attempt)),
                ])
            }),
        ]
        if stop < list.count { answer["paginationToken"] = .string("page-\(stop)") }
        return Self.json(200, .object(answer))
    }

    private func extend(_ originalId: String, _ body: [UInt8], _ now: Int64) -> Answer {
        guard let stored = state.withLock({ $0.transactions.last(where: { $0.originalTransactionId == originalId }) })
        else { return Self.error(404, 4040005, "Original transaction id not found.") }
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else {
            return Self.error(400, 4000000, "Bad request.")
        }
        guard let days = json["extendByDays"]?.int64Value, (1...90).contains(days) else {
            return Self.error(400, 4000009, "Invalid extend by days value.")
        }
        guard let reason = json["extendReasonCode"]?.int64Value, (0...3).contains(reason) else {
            return Self.error(400, 4000010, "Invalid extend reason code.")
        }
        guard let identifier = json["requestIdentifier"]?.stringValue, !identifier.isEmpty else {
            return Self.error(400, 4000011, "Invalid request identifier.")
        }
        var answer: [String: JSONValue] = [
            "originalTransactionId": .string(originalId), "success": .bool(true),
            "effectiveDate": .int((stored.payload.millis("expiresDate") ?? now) + days * 86_400_000),
        ]
        if let line = stored.payload.string("webOrderLineItemId") { answer["webOrderLineItemId"] = .string(line) }
        return Self.json(200, .object(answer))
    }

    // MARK: Helpers

    private static func matches(_ stored: Stored, _ id: String) -> Bool {
        stored.transactionId == id || stored.originalTransactionId == id || stored.payload.string("appTransactionId") == id
    }

    /// Apple's `productType` filter word for a transaction's `type`.
    private static func productType(_ payload: JSONValue) -> String? {
        switch payload.string("type") {
        case "Auto-Renewable Subscription": "AUTO_RENEWABLE"
        case "Non-Renewing Subscription": "NON_RENEWABLE"
        case "Consumable": "CONSUMABLE"
        case "Non-Consumable": "NON_CONSUMABLE"
        default: nil
        }
    }

    /// 1 active, 2 expired, 5 revoked (billing retry and grace need renewal info: `addRenewalInfo(status:)`).
    private static func status(_ payload: JSONValue, _ now: Int64) -> Int {
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

    private static func attempt(_ attempt: SendAttempt) -> JSONValue {
        var object: [String: JSONValue] = [:]
        if let date = attempt.attemptDate { object["attemptDate"] = .int(date) }
        if let result = attempt.sendAttemptResult { object["sendAttemptResult"] = .string(result) }
        return .object(object)
    }

    private static let unauthorized = Answer(status: 401, headers: [:], body: [], hang: false)
    private static var notFound: Answer { error(404, 4040010, "Transaction id not found.") }

    private static func error(_ status: Int, _ code: Int64, _ message: String) -> Answer {
        json(status, ["errorCode": .int(code), "errorMessage": .string(message)])
    }

    private static func json(_ status: Int, _ value: JSONValue) -> Answer {
        Answer(status: status, headers: ["Content-Type": "application/json"], body: value.serialized(), hang: false)
    }
}
