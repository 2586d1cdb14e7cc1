import AppStore
import Foundation
import JSON
import Synchronization

/// Apple's App Store Server API for one environment, without I/O (the caller serves it over
/// HTTP: TestSupport's `AppleServerAPIStandIn` for tests, `iap-ledger testkit apple` for people), like
/// `VerifyReceiptStandIn`. It checks every request's JWT as Apple does (401, empty body, on any
/// broken rule: see `AppStoreServerTokenCheck`), then answers from the data it was given:
/// transactions (signed by whoever the test trusts; it never re-signs), renewal infos,
/// notifications. It records every request, so tests can assert what was sent.
///
/// A transaction belongs to a customer (`customer:` when added, else its `appTransactionId`,
/// else its `originalTransactionId`); Get Transaction History and Get All Subscription Statuses
/// answer for the customer of the id asked about, as Apple does for an app account. A
/// transaction added with an `orderId` is in that order: Look Up Order ID answers it (status
/// 0), and any other order id with status 1 (Apple's "invalid"), as Apple does.
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
    let state = Mutex(State())

    struct Stored: Sendable {
        var signed: String
        var payload: JSONValue
        var customer: String
        var transactionId: String
        var originalTransactionId: String
        /// The order on the customer's e-mail receipt (Look Up Order ID); nil: in none.
        var orderId: String?
    }

    struct Notification: Sendable {
        var signedPayload: String
        var payload: JSONValue
        var sendAttempts: [SendAttempt]
    }

    struct State: Sendable {
        var transactions: [Stored] = []
        var renewals: [String: (signed: String, status: Int?)] = [:]
        var notifications: [Notification] = []
        var testNotifications: [String: TestNotificationStatus] = [:]
        var testNotificationOrder: [String] = []
        var faults: [Fault] = []
        var requests: [Request] = []
        var historyPageSize = 20
        /// Set App Account Token's writes: originalTransactionId → token.
        var appAccountTokens: [String: String] = [:]
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

    /// Adds a signed transaction (returned as given). `customer` groups it into one history;
    /// `orderId` puts it in that order (several transactions may share one).
    public func addTransaction(_ signedTransaction: String, customer: String? = nil, orderId: String? = nil) {
        let payload = Self.payload(signedTransaction) ?? .object([:])
        let id = payload.string("transactionId") ?? ""
        let original = payload.string("originalTransactionId") ?? id
        let owner = customer ?? payload.string("appTransactionId") ?? original
        state.withLock {
            $0.transactions.append(
                Stored(
                    signed: signedTransaction, payload: payload, customer: owner, transactionId: id,
                    originalTransactionId: original, orderId: orderId))
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
            $0.notifications.append(
                Notification(signedPayload: signedPayload, payload: payload, sendAttempts: sendAttempts))
        }
    }

    /// Forgets every transaction, renewal info and notification (faults, requests and test
    /// notification tokens stay), so a caller holding its data elsewhere can give it anew.
    public func forgetData() {
        state.withLock {
            $0.transactions = []
            $0.renewals = [:]
            $0.notifications = []
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
        let answer = decide(
            method: method, path: path, query: query, authorization: authorization, body: body,
            nowMillis: nowMillis)
        state.withLock {
            $0.requests.append(
                Request(
                    method: method, path: path, query: query, body: body, authorization: authorization,
                    status: answer.hang ? 0 : answer.status))
        }
        return answer
    }

    private func decide(
        method: String, path: String, query: [String: String], authorization: String?, body: [UInt8], nowMillis: Int64
    ) -> Answer {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return Self.unauthorized }
        do { try check.check(String(authorization.dropFirst(7)), nowMillis: nowMillis) } catch {
            return Self.unauthorized
        }
        if let fault = state.withLock({ $0.faults.isEmpty ? nil : $0.faults.removeFirst() }) {
            switch fault {
            case .tooManyRequests(let seconds):
                var answer = Self.error(429, 4_290_000, "Rate limit exceeded.")
                if let seconds { answer.headers["Retry-After"] = String(seconds) }
                return answer
            case .serverError(let status): return Self.error(status, 5_000_000, "An unknown error occurred.")
            case .raw(let status, let text):
                return Answer(
                    status: status, headers: ["Content-Type": "application/json"], body: Array(text.utf8), hang: false)
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
                return Self.error(404, 4_040_008, "Test notification not found.")
            }
            var object: [String: JSONValue] = ["sendAttempts": .array(status.sendAttempts.map(Self.attempt))]
            if let payload = status.signedPayload { object["signedPayload"] = .string(payload) }
            return Self.json(200, .object(object))
        case ("GET", ["inApps", "v1", "lookup"], 4): return orderLookup(segments[3])
        case ("PUT", ["inApps", "v1", "transactions"], 5) where segments[4] == "appAccountToken":
            return setAppAccountToken(segments[3], body)
        case ("PUT", ["inApps", "v1", "subscriptions"], 5) where segments[3] == "extend":
            return extend(segments[4], body, nowMillis)
        default:
            return Self.error(404, 4_040_000, "Not found.")
        }
    }

}
