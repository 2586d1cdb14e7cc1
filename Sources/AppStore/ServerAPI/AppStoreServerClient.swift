import Dispatch
import Foundation
import JSON

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Client of Apple's App Store Server API (docs/FORMATS.md §6) for one app: every request
/// carries a fresh ES256 token (`AppStoreServerToken`), as Apple asks.
///
/// What it does for the caller, so no feature has to: calls scoped to a transaction go to
/// Production first and, on Apple's 4040010 ("transaction id not found"), to Sandbox — sandbox
/// purchases exist only on the Sandbox host (a client for a local-testing app asks only
/// LocalTesting: `searchOrder`); 429 waits for `Retry-After` (bounded); network
/// errors, timeouts, 5xx and Apple's retryable error codes are retried with doubling backoff a
/// bounded number of times, then `unavailable`; Apple's other errors are `rejected` with its
/// `errorCode`; a 2xx that is not Apple's format is `malformedResponse`, never a crash.
///
/// Signed items are returned as Apple sent them: verifying them is the caller's job (with
/// `SignedDataVerifier`, exactly as ingestion does), so nothing here is trusted yet.
/// Synchronous, like the HTTP handlers and `ReceiptVerifier`; time and sleeping are injected so
/// tests assert waits without waiting.
public final class AppStoreServerClient: Sendable {
    public static let appleProduction = URL(string: "https://api.storekit.apple.com")!
    public static let appleSandbox = URL(string: "https://api.storekit-sandbox.apple.com")!

    /// How hard it tries. The worst case of one call is about
    /// `(maxRetries + 1) × timeoutSeconds + Σ waits`, which the defaults keep under a minute.
    public struct Policy: Sendable, Equatable {
        /// Seconds per HTTP attempt.
        public var timeoutSeconds: Double
        /// Extra attempts after a temporary failure (network, timeout, 5xx, 429, retryable codes).
        public var maxRetries: Int
        /// First retry delay in seconds, doubled each retry (capped at `maxBackoffSeconds`).
        public var backoffSeconds: Double
        public var maxBackoffSeconds: Double
        /// A `Retry-After` longer than this is not waited for: the call is `unavailable` at once
        /// (a request handler must not sleep for minutes).
        public var maxRetryAfterSeconds: Double
        /// Bound on the pages of one history (20 transactions each); a history that never ends is malformed.
        public var maxPages: Int

        public init(
            timeoutSeconds: Double = 15, maxRetries: Int = 3, backoffSeconds: Double = 0.5,
            maxBackoffSeconds: Double = 8,
            maxRetryAfterSeconds: Double = 30, maxPages: Int = 1000
        ) {
            self.timeoutSeconds = timeoutSeconds
            self.maxRetries = max(0, maxRetries)
            self.backoffSeconds = max(0, backoffSeconds)
            self.maxBackoffSeconds = max(0, maxBackoffSeconds)
            self.maxRetryAfterSeconds = max(0, maxRetryAfterSeconds)
            self.maxPages = max(1, maxPages)
        }
    }

    public let bundleId: String
    public let policy: Policy
    let token: AppStoreServerToken
    let productionURL: URL
    let sandboxURL: URL
    /// Apple has no LocalTesting host: nil until the caller names a stand-in.
    let localTestingURL: URL?
    /// The environments a call given none asks, in order, moving on while the answer is 4040010.
    public let searchOrder: [AppStoreServerEnvironment]
    let clock: @Sendable () -> Int64
    let sleep: @Sendable (Double) -> Void
    let session: URLSession

    /// - Parameters:
    ///   - clock: epoch milliseconds (each token's `iat`).
    ///   - sleep: how a wait (backoff, `Retry-After`) is spent, in seconds; tests record instead.
    public init(
        key: AppStoreServerKey, bundleId: String, productionURL: URL = AppStoreServerClient.appleProduction,
        sandboxURL: URL = AppStoreServerClient.appleSandbox, localTestingURL: URL? = nil,
        searchOrder: [AppStoreServerEnvironment] = [.production, .sandbox], policy: Policy = Policy(),
        clock: @escaping @Sendable () -> Int64 = AppStoreServerClient.systemMillis,
        sleep: @escaping @Sendable (Double) -> Void = AppStoreServerClient.systemSleep
    ) {
        self.bundleId = bundleId
        self.policy = policy
        token = AppStoreServerToken(key: key, bundleId: bundleId)
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.localTestingURL = localTestingURL
        self.searchOrder = searchOrder.isEmpty ? [.production, .sandbox] : searchOrder
        self.clock = clock
        self.sleep = sleep
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = policy.timeoutSeconds
        configuration.timeoutIntervalForResource = policy.timeoutSeconds
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    public static let systemMillis: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    public static let systemSleep: @Sendable (Double) -> Void = { seconds in
        if seconds > 0 { usleep(useconds_t(min(seconds, 3600) * 1_000_000)) }
    }

    /// Where `environment` is asked; nil for LocalTesting without a stand-in's URL.
    public func baseURL(_ environment: AppStoreServerEnvironment) -> URL? {
        switch environment {
        case .production: productionURL
        case .sandbox: sandboxURL
        case .localTesting: localTestingURL
        }
    }

    // MARK: Endpoints

    /// Get Transaction History v2 (`GET /inApps/v2/history/{transactionId}`): every page, by
    /// `revision` with the same filters, until `hasMore` is false.
    /// - Parameters:
    ///   - environment: nil asks `searchOrder` (Production, then Sandbox on 4040010).
    ///   - revision: start after a revision a previous call returned (incremental sync).
    public func transactionHistory(
        _ transactionId: String, query: TransactionHistoryQuery = TransactionHistoryQuery(),
        environment: AppStoreServerEnvironment? = nil, revision: String? = nil
    ) throws(AppStoreServerError) -> TransactionHistory {
        let path = "/inApps/v2/history/" + (try Self.segment(transactionId, "transactionId"))
        var items = query.items
        if let revision { items.append(("revision", revision)) }
        var (found, body) = try sendFindingEnvironment(Call(method: "GET", path: path, query: items), environment)
        var history = TransactionHistory(environment: found, signedTransactions: [], revision: nil, pages: 0)
        while true {
            let json = try Self.object(body, "transaction history")
            guard let hasMore = json["hasMore"]?.boolValue else {
                throw .malformedResponse("history page without hasMore")
            }
            guard let signed = json["signedTransactions"]?.arrayValue else {
                throw .malformedResponse("history page without signedTransactions")
            }
            for item in signed {
                guard let jws = item.stringValue else {
                    throw .malformedResponse("a signedTransactions entry is not a string")
                }
                history.signedTransactions.append(jws)
            }
            history.pages += 1
            let next = json["revision"]?.stringValue
            guard hasMore else {
                history.revision = next ?? history.revision
                return history
            }
            guard let next, !next.isEmpty else { throw .malformedResponse("hasMore without a revision") }
            // The same revision again would loop for ever.
            guard next != history.revision else { throw .malformedResponse("revision did not advance") }
            guard history.pages < policy.maxPages else {
                throw .malformedResponse("history longer than \(policy.maxPages) pages")
            }
            history.revision = next
            found = history.environment
            body = try send(Call(method: "GET", path: path, query: query.items + [("revision", next)]), found)
        }
    }

    /// Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`), optionally
    /// only chains in `statuses` (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    public func allSubscriptionStatuses(
        _ transactionId: String, statuses: [Int] = [], environment: AppStoreServerEnvironment? = nil
    ) throws(AppStoreServerError) -> SubscriptionStatuses {
        let path = "/inApps/v1/subscriptions/" + (try Self.segment(transactionId, "transactionId"))
        let (found, body) = try sendFindingEnvironment(
            Call(method: "GET", path: path, query: statuses.map { ("status", String($0)) }), environment)
        let json = try Self.object(body, "subscription statuses")
        guard let groups = json["data"]?.arrayValue else { throw .malformedResponse("statuses without data") }
        var items: [SubscriptionStatuses.Item] = []
        for group in groups {
            guard group.objectValue != nil, let last = group["lastTransactions"]?.arrayValue else {
                throw .malformedResponse("a status group without lastTransactions")
            }
            for entry in last {
                guard entry.objectValue != nil else {
                    throw .malformedResponse("a lastTransactions entry is not an object")
                }
                items.append(
                    .init(
                        subscriptionGroupIdentifier: group.string("subscriptionGroupIdentifier"),
                        originalTransactionId: entry.string("originalTransactionId"), status: entry.int("status"),
                        signedTransactionInfo: entry["signedTransactionInfo"]?.stringValue,
                        signedRenewalInfo: entry["signedRenewalInfo"]?.stringValue))
            }
        }
        return SubscriptionStatuses(environment: found, items: items)
    }

    /// Get Transaction Info (`GET /inApps/v1/transactions/{transactionId}`).
    public func transactionInfo(
        _ transactionId: String, environment: AppStoreServerEnvironment? = nil
    ) throws(AppStoreServerError) -> TransactionInfo {
        let path = "/inApps/v1/transactions/" + (try Self.segment(transactionId, "transactionId"))
        let (found, body) = try sendFindingEnvironment(Call(method: "GET", path: path), environment)
        let json = try Self.object(body, "transaction info")
        guard let signed = json["signedTransactionInfo"]?.stringValue else {
            throw .malformedResponse("transaction info without signedTransactionInfo")
        }
        return TransactionInfo(environment: found, signedTransactionInfo: signed)
    }

    /// One page of Get Notification History (`POST /inApps/v1/notifications/history`); pass the
    /// previous page's `paginationToken` (with the same query) for the next. Per environment:
    /// each host keeps its own notifications.
    public func notificationHistory(
        _ query: NotificationHistoryQuery, paginationToken: String? = nil, environment: AppStoreServerEnvironment
    ) throws(AppStoreServerError) -> NotificationHistoryPage {
        let body = try send(
            Call(
                method: "POST", path: "/inApps/v1/notifications/history",
                query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: query.body),
            environment)
        let json = try Self.object(body, "notification history")
        guard let history = json["notificationHistory"]?.arrayValue else {
            throw .malformedResponse("notification history without notificationHistory")
        }
        var items: [NotificationHistoryPage.Item] = []
        for entry in history {
            guard let payload = entry["signedPayload"]?.stringValue else {
                throw .malformedResponse("a notificationHistory entry without signedPayload")
            }
            items.append(.init(signedPayload: payload, sendAttempts: try Self.attempts(entry["sendAttempts"])))
        }
        let hasMore = json["hasMore"]?.boolValue ?? false
        let token = json["paginationToken"]?.stringValue
        if hasMore && (token ?? "").isEmpty { throw .malformedResponse("hasMore without a paginationToken") }
        return NotificationHistoryPage(items: items, hasMore: hasMore, paginationToken: token)
    }

    /// Send Consumption Information v2 (`PUT /inApps/v2/transactions/consumption/{transactionId}`),
    /// the answer to a CONSUMPTION_REQUEST. Apple answers 202 with no body.
    /// - Returns: the environment that took it.
    @discardableResult
    public func sendConsumptionInformation(
        _ transactionId: String, _ information: ConsumptionInformation, environment: AppStoreServerEnvironment? = nil
    ) throws(AppStoreServerError) -> AppStoreServerEnvironment {
        if let percentage = information.consumptionPercentage, !(0...100_000).contains(percentage) {
            throw .invalidArgument("consumptionPercentage must be 0…100000 milliunits, got \(percentage)")
        }
        let path = "/inApps/v2/transactions/consumption/" + (try Self.segment(transactionId, "transactionId"))
        return try sendFindingEnvironment(Call(method: "PUT", path: path, body: information.body), environment).0
    }

    /// Request a Test Notification (`POST /inApps/v1/notifications/test`) → its token.
    public func requestTestNotification(environment: AppStoreServerEnvironment) throws(AppStoreServerError) -> String {
        let body = try send(Call(method: "POST", path: "/inApps/v1/notifications/test"), environment)
        guard let token = try Self.object(body, "test notification")["testNotificationToken"]?.stringValue,
            !token.isEmpty
        else { throw .malformedResponse("no testNotificationToken") }
        return token
    }

    /// Get Test Notification Status (`GET /inApps/v1/notifications/test/{token}`).
    public func testNotificationStatus(
        _ testNotificationToken: String, environment: AppStoreServerEnvironment
    ) throws(AppStoreServerError) -> TestNotificationStatus {
        let path = "/inApps/v1/notifications/test/" + (try Self.segment(testNotificationToken, "testNotificationToken"))
        let json = try Self.object(try send(Call(method: "GET", path: path), environment), "test notification status")
        return TestNotificationStatus(
            signedPayload: json["signedPayload"]?.stringValue, sendAttempts: try Self.attempts(json["sendAttempts"]))
    }

    /// Extend a Subscription Renewal Date (`PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`).
    public func extendRenewalDate(
        _ originalTransactionId: String, _ request: RenewalDateExtension, environment: AppStoreServerEnvironment? = nil
    ) throws(AppStoreServerError) -> RenewalDateExtensionResult {
        guard (1...90).contains(request.extendByDays) else {
            throw .invalidArgument("extendByDays must be 1…90, got \(request.extendByDays)")
        }
        guard (0...3).contains(request.extendReasonCode) else {
            throw .invalidArgument("extendReasonCode must be 0…3, got \(request.extendReasonCode)")
        }
        guard !request.requestIdentifier.isEmpty, request.requestIdentifier.utf8.count <= 128 else {
            throw .invalidArgument("requestIdentifier must be 1…128 characters")
        }
        let path =
            "/inApps/v1/subscriptions/extend/"
            + (try Self.segment(originalTransactionId, "originalTransactionId"))
        let (found, body) = try sendFindingEnvironment(Call(method: "PUT", path: path, body: request.body), environment)
        let json = try Self.object(body, "renewal date extension")
        guard let success = json["success"]?.boolValue else { throw .malformedResponse("extension without success") }
        return RenewalDateExtensionResult(
            environment: found, originalTransactionId: json.string("originalTransactionId"),
            webOrderLineItemId: json.string("webOrderLineItemId"), success: success,
            effectiveDate: json.millis("effectiveDate"))
    }

}
