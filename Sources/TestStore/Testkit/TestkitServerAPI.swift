import AppStore
import Foundation
import Glibc
import HTTP
import JSON
import Synchronization

/// The App Store Server API half of `testkit apple`: `AppStoreServerAPIStandIn` (which checks
/// each request's JWT as Apple does) for the LocalTesting environment, answering from the test
/// store's state as it is at that request — every transaction and renewal minted so far, signed
/// again with the test CA so `signedDate` is the moment it answered (as Apple's answers are),
/// and every notification `testkit notify` minted, for Get Notification History. Each chain
/// belongs to the user it was bought for, so a history holds that user's purchases only.
///
/// Three calls change what "Apple" holds, so they are played here on top of the stand-in's
/// answer (the stand-in only checks and answers: it is given the state anew at each request):
/// - Extend a Subscription Renewal Date moves the chain's current period in the state
///   (`TestkitMinter.extend`), so the Get All Subscription Statuses that follows answers the new
///   expiry, and Apple's RENEWAL_EXTENDED notification is sent to `notificationURL`;
/// - Set App Account Token puts the token on the chain's current transaction and renewal info in
///   the state (`TestkitMinter.setAppAccountToken`), so later renewals and sync carry it;
/// - Request a Test Notification mints a TEST notification signed by the test CA and sends it
///   to `notificationURL`, and Get Test Notification Status then reports it with its send attempt.
final class TestkitServerAPI: Sendable {
    let standIn: AppStoreServerAPIStandIn
    private let store: TestkitStore
    private let signer: JWSSigner
    private let bundleId: String
    /// Where notifications go: App Store Connect's "Production/Sandbox Server URL", here the
    /// service's `/v1/notifications/apple` (`testkit apple --url`).
    let notificationURL: URL
    /// One request at a time: each gives the stand-in the state anew, then asks it.
    private let turn = Mutex(())

    /// Nil when the config names no `serverAPI` for the app (a store made before `testkit
    /// apple` served the Server API): there is no key to check tokens with.
    init?(store: TestkitStore, app: TestkitConfiguration.App, notificationURL: URL) throws {
        guard let api = app.serverAPI else { return nil }
        standIn = try AppStoreServerAPIStandIn(
            environment: .localTesting, bundleId: app.bundleId, appAppleId: app.appAppleId, issuerId: api.issuerId,
            keyId: api.keyId, publicKeyPEM: api.publicKeyPEM)
        self.store = store
        bundleId = app.bundleId
        self.notificationURL = notificationURL
        signer = try store.authority().signer()
    }

    /// A notification to send once the answer is on its way (Apple sends after it answered).
    private struct Outgoing: Sendable {
        var signedPayload: String
        var what: String
        /// Set for a TEST notification: its Get Test Notification Status token.
        var testToken: String?
    }

    /// Answers a request below the base URL (`/inApps/…`).
    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let (response, outgoing) = turn.withLock { _ -> (HTTPResponse, Outgoing?) in
            let now = TestkitCommand.nowMillis()
            let state: TestkitState
            do { state = try store.loadState() } catch {
                TestkitCommand.printError("testkit apple: \(error)")
                return (Self.unknownError, nil)
            }
            give(state, now: now)
            var answer = standIn.answer(
                method: request.method, path: request.path, query: request.query,
                authorization: request.header("Authorization"), body: request.body, nowMillis: now)
            guard answer.status == 200 else {
                return (HTTPResponse(status: answer.status, headers: answer.headers, body: answer.body), nil)
            }
            let segments = request.path.split(separator: "/").map(String.init)
            var outgoing: Outgoing?
            do {
                if request.method == "PUT", segments.count == 5, segments[2] == "subscriptions", segments[3] == "extend"
                {
                    outgoing = try extend(segments[4], request.body, answer: &answer, now: now)
                } else if request.method == "PUT", segments.count == 5, segments[2] == "transactions",
                    segments[4] == "appAccountToken"
                {
                    try setAppAccountToken(segments[3])
                } else if request.method == "POST", segments.count == 4, segments[2] == "notifications",
                    segments[3] == "test"
                {
                    outgoing = testNotification(answer, now: now)
                }
            } catch {
                TestkitCommand.printError("testkit apple: \(error)")
                return (Self.unknownError, nil)
            }
            return (HTTPResponse(status: answer.status, headers: answer.headers, body: answer.body), outgoing)
        }
        if let outgoing { send(outgoing) }
        return response
    }

    static var unknownError: HTTPResponse {
        HTTPResponse(
            status: 500, headers: ["Content-Type": "application/json"],
            body: JSONValue.object(["errorCode": 5_000_000, "errorMessage": "An unknown error occurred."]).serialized())
    }

    /// Apple extended the chain (the stand-in checked the request): the state's current period
    /// moves, once per request identifier, and the answer's `effectiveDate` is the new expiry.
    private func extend(_ chain: String, _ body: [UInt8], answer: inout AppStoreServerAPIStandIn.Answer, now: Int64)
        throws
        -> Outgoing?
    {
        guard let json = try? JSONValue.parse(body), let days = json["extendByDays"]?.int64Value,
            let identifier = json["requestIdentifier"]?.stringValue
        else { return nil }  // the stand-in refused such a body already
        let uuid = UUID().uuidString.lowercased()
        let (expires, notification) = try store.withStateLock {
            var state = try store.loadState()
            let outcome = try TestkitMinter.extend(
                originalTransactionId: chain, days: days, requestIdentifier: identifier, bundleId: bundleId, now: now,
                uuid: uuid, state: &state, sign: { signer.sign(payload: $0.serialized()) })
            var signed: String?
            if let payload = outcome.notification {
                let jws = signer.sign(payload: payload.serialized())
                state.notifications.append(jws)  // in Get Notification History, as Apple lists it
                signed = jws
            }
            try store.save(state)
            return (outcome.expires, signed)
        }
        if var object = (try? JSONValue.parse(answer.body))?.objectValue {
            object["effectiveDate"] = .int(expires)
            answer.body = JSONValue.object(object).serialized()
        }
        return notification.map { Outgoing(signedPayload: $0, what: "RENEWAL_EXTENDED about \(chain)") }
    }

    /// Apple accepted the token (the stand-in checked the body and the chain): the state's chain
    /// carries it from its current period on.
    private func setAppAccountToken(_ chain: String) throws {
        guard let token = standIn.appAccountToken(of: chain) else { return }
        try store.withStateLock {
            var state = try store.loadState()
            try TestkitMinter.setAppAccountToken(originalTransactionId: chain, token: token, state: &state)
            try store.save(state)
        }
        TestkitCommand.printError(
            "testkit apple: set appAccountToken \(token) on \(chain) (its current and later transactions)")
    }

    /// Apple handed out a test notification token: the TEST notification it will send, which
    /// Get Test Notification Status names (`signedPayload`) from now on.
    private func testNotification(_ answer: AppStoreServerAPIStandIn.Answer, now: Int64) -> Outgoing? {
        guard let token = (try? JSONValue.parse(answer.body))?["testNotificationToken"]?.stringValue else { return nil }
        var unchanged = TestkitState()
        guard
            let payload = try? TestkitMinter.notification(
                TestkitNotification(type: "TEST"), bundleId: bundleId, now: now, uuid: UUID().uuidString.lowercased(),
                state: &unchanged, sign: { signer.sign(payload: $0.serialized()) })
        else { return nil }
        let jws = signer.sign(payload: payload.serialized())
        standIn.setTestNotificationStatus(token, TestNotificationStatus(signedPayload: jws, sendAttempts: []))
        return Outgoing(signedPayload: jws, what: "TEST (token \(token))", testToken: token)
    }

    /// Sends on a thread of its own, after the answer: the service asked and waits for that
    /// answer, and the notification arrives at the same service.
    private func send(_ outgoing: Outgoing) {
        let thread = Thread { [self] in
            let (attempt, detail) = TestkitDelivery.send(
                outgoing.signedPayload, to: notificationURL, now: TestkitCommand.nowMillis)
            if let token = outgoing.testToken {
                standIn.setTestNotificationStatus(
                    token, TestNotificationStatus(signedPayload: outgoing.signedPayload, sendAttempts: [attempt]))
            }
            let result = attempt.sendAttemptResult ?? "?"
            TestkitCommand.printError(
                "testkit apple: sent \(outgoing.what) to \(notificationURL.absoluteString): \(result)"
                    + (result == "SUCCESS" ? "" : " (\(detail)); is the service there? (testkit apple --url)"))
        }
        thread.name = "testkit-apple-send"
        thread.start()
    }

    /// What Apple knows as of `now`, signed now.
    private func give(_ state: TestkitState, now: Int64) {
        standIn.forgetData()
        var latest: [String: [String: JSONValue]] = [:]
        for var transaction in state.transactions {
            let chain = transaction["originalTransactionId"]?.stringValue ?? ""
            transaction["signedDate"] = .int(now)
            standIn.addTransaction(
                signer.sign(payload: JSONValue.object(transaction).serialized()),
                customer: state.customers[chain] ?? chain,
                orderId: transaction["transactionId"]?.stringValue.map(TestkitOrders.orderId(ofTransaction:)))
            latest[chain] = transaction
        }
        for (chain, var renewal) in state.renewals.sorted(by: { $0.key < $1.key }) {
            renewal["signedDate"] = .int(now)
            let status = latest[chain].map { TestkitMinter.status(transaction: $0, renewal: renewal, now: now) }
            standIn.addRenewalInfo(
                signer.sign(payload: JSONValue.object(renewal).serialized()), status: status.map { Int($0) })
        }
        for notification in state.notifications { standIn.addNotification(notification) }
    }
}
