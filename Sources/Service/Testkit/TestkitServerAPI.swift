import AppStore
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
final class TestkitServerAPI: Sendable {
    let standIn: AppStoreServerAPIStandIn
    private let store: TestkitStore
    private let signer: JWSSigner
    /// One request at a time: each gives the stand-in the state anew, then asks it.
    private let turn = Mutex(())

    /// Nil when the config names no `serverAPI` for the app (a store made before `testkit
    /// apple` served the Server API): there is no key to check tokens with.
    init?(store: TestkitStore, app: Configuration.App) throws {
        guard let api = app.serverAPI else { return nil }
        standIn = try AppStoreServerAPIStandIn(
            environment: .localTesting, bundleId: app.bundleId, appAppleId: app.appAppleId, issuerId: api.issuerId,
            keyId: api.keyId, publicKeyPEM: api.key.publicKeyPEM)
        self.store = store
        signer = try store.authority().signer()
    }

    /// Answers a request below the base URL (`/inApps/…`).
    func handle(_ request: HTTPRequest) -> HTTPResponse {
        turn.withLock { _ in
            let now = TestkitCommand.nowMillis()
            let state: TestkitState
            do { state = try store.loadState() } catch {
                CommandLineInterface.printError("testkit apple: \(error)")
                return HTTPResponse(
                    status: 500, headers: ["Content-Type": "application/json"],
                    body: JSONValue.object(["errorCode": 5000000, "errorMessage": "An unknown error occurred."]).serialized())
            }
            give(state, now: now)
            let answer = standIn.answer(
                method: request.method, path: request.path, query: request.query,
                authorization: request.header("Authorization"), body: request.body, nowMillis: now)
            return HTTPResponse(status: answer.status, headers: answer.headers, body: answer.body)
        }
    }

    /// What Apple knows as of `now`, signed now.
    private func give(_ state: TestkitState, now: Int64) {
        standIn.forgetData()
        var latest: [String: [String: JSONValue]] = [:]
        for var transaction in state.transactions {
            let chain = transaction["originalTransactionId"]?.stringValue ?? ""
            transaction["signedDate"] = .int(now)
            standIn.addTransaction(signer.sign(payload: JSONValue.object(transaction).serialized()),
                                   customer: state.customers[chain] ?? chain)
            latest[chain] = transaction
        }
        for (chain, var renewal) in state.renewals.sorted(by: { $0.key < $1.key }) {
            renewal["signedDate"] = .int(now)
            let status = latest[chain].map { TestkitMinter.status(transaction: $0, renewal: renewal, now: now) }
            standIn.addRenewalInfo(signer.sign(payload: JSONValue.object(renewal).serialized()), status: status.map { Int($0) })
        }
        for notification in state.notifications { standIn.addNotification(notification) }
    }
}
