import AppStore
import EventStore
import HTTP
import Infrastructure
import Ingest
import JSON

/// The "is my notification URL right?" check (api.md §5), both admin:
/// - `POST /v1/admin/apple/test-notification` body `{"bundleId"?, "environment"?}` asks Apple
///   (Request a Test Notification, with the app's serverAPI key) to send a TEST notification to
///   the URL set in App Store Connect → `{"testNotificationToken", "bundleId", "environment"}`;
/// - `GET /v1/admin/apple/test-notification/{token}` asks Apple how its delivery went (Get Test
///   Notification Status), in the app and environment that asked for the token (remembered in
///   `apple.test_notification_tokens`: Apple must be asked where it handed the token out, and
///   the token does not say where) → `{"sendAttempts": [{"attemptDate", "sendAttemptResult"}],
///   "recorded", "notificationUUID"}`, `recorded` saying whether THIS service's log holds the
///   TEST notification Apple reports.
///
/// On the POST, `bundleId` may be left out when one app has a serverAPI key, `environment` when
/// the app accepts one store environment only; otherwise they are required. The GET takes them
/// as optional query parameters (older callers name them): needed only for a token this service
/// did not ask for.
package struct TestNotificationRoutes: Sendable {
    package let ingestion: Ingestion
    /// The shell, as the room's use cases hold it.
    package var service: LedgerService { ingestion.ledger }

    package init(ingestion: Ingestion) {
        self.ingestion = ingestion
    }

    package func register(on router: inout Router) {
        router.add("POST", "/v1/admin/apple/test-notification", scope: "admin") { request, _ in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let body = try Self.body(request.body)
                let target = try Self.target(
                    service.configuration.apps, bundleId: try OfferRoutes.identifier(body, "bundleId", required: false),
                    environment: try Self.environment(body["environment"].map { $0.stringValue ?? "" }))
                let token: String
                do throws(AppStoreServerError) {
                    token = try target.client.requestTestNotification(environment: target.environment)
                } catch {
                    throw .appStoreServer(error)
                }
                // Remembered so the status can be asked without naming them (api.md §5 names no
                // parameter): on any instance, after a restart. Apple handed the token out
                // already, so a failure here does not take it back; the lookup then needs them named.
                do throws(ServiceError) {
                    try service.read { connection throws(ServiceError) in
                        _ = try database { () throws(DatabaseError) in
                            try connection.execute(
                                TestNotificationTokensTable.remember(
                                    token: token, bundleId: target.bundleId, environment: target.environment.rawValue,
                                    now: service.clock()))
                        }
                    }
                } catch {
                    service.logger.warning(
                        "test notification: the token's app and environment could not be remembered",
                        [
                            "request.id": request.requestId, "error": "\(error)",
                        ])
                }
                service.logger.info(
                    "test notification requested",
                    [
                        "request.id": request.requestId, "bundleId": target.bundleId,
                        "environment": target.environment.rawValue,
                    ])
                var writer = JSONWriter(capacity: 160)
                writer.beginObject()
                writer.key("testNotificationToken")
                writer.string(token)
                writer.key("bundleId")
                writer.string(target.bundleId)
                writer.key("environment")
                writer.string(target.environment.rawValue)
                writer.endObject()
                return .json(200, writer.bytes)
            }
        }
        router.add("GET", "/v1/admin/apple/test-notification/{token}", scope: "admin") { request, parameters in
            ErrorMapping.respond(service.logger, request) { () throws(ServiceError) in
                let token = try Self.token(parameters["token"] ?? "")
                var query: [String: JSONValue] = [:]
                if let bundleId = request.query["bundleId"] { query["bundleId"] = .string(bundleId) }
                let bundleId = try OfferRoutes.identifier(query, "bundleId", required: false)
                let environment = try Self.environment(request.query["environment"])
                // What asked for the token fills in what the query leaves out (both are optional
                // now, kept for older callers; a bundleId naming another app wins).
                var remembered: TestNotificationTokensTable.Row?
                if bundleId == nil || environment == nil {
                    remembered = try service.read { connection throws(ServiceError) in
                        try database { () throws(DatabaseError) in
                            TestNotificationTokensTable.decode(
                                try connection.query(TestNotificationTokensTable.lookup(token)))
                        }
                    }
                    if let row = remembered, bundleId != nil, bundleId != row.bundleId { remembered = nil }
                }
                let target: Target
                do throws(ServiceError) {
                    target = try Self.target(
                        service.configuration.apps, bundleId: bundleId ?? remembered?.bundleId,
                        environment: environment
                            ?? remembered.flatMap { AppStoreServerEnvironment(rawValue: $0.environment) })
                } catch {
                    guard case .invalidRequest(let detail) = error, remembered == nil else { throw error }
                    throw .invalidRequest(
                        detail + " (this service has no record of asking Apple for this token: "
                            + "POST /v1/admin/apple/test-notification remembers where each token came from)")
                }
                let status: TestNotificationStatus
                do throws(AppStoreServerError) {
                    status = try target.client.testNotificationStatus(token, environment: target.environment)
                } catch {
                    throw .appStoreServer(error)
                }
                let notificationUUID = try status.signedPayload.map { payload throws(ServiceError) in
                    try Self.notificationUUID(payload, ingestion: ingestion)
                }
                let recorded =
                    try notificationUUID.map { uuid throws(ServiceError) in
                        try service.read { connection throws(ServiceError) in
                            try database { () throws(DatabaseError) in
                                try service.repository.store.wasRecorded(.appleNotification(uuid), on: connection)
                            }
                        }
                    } ?? false
                var writer = JSONWriter(capacity: 256)
                writer.beginObject()
                writer.key("sendAttempts")
                writer.beginArray()
                for attempt in status.sendAttempts {
                    writer.beginObject()
                    writer.key("attemptDate")
                    writer.timestampOrNull(attempt.attemptDate)
                    writer.key("sendAttemptResult")
                    writer.stringOrNull(attempt.sendAttemptResult)
                    writer.endObject()
                }
                writer.endArray()
                writer.key("recorded")
                writer.bool(recorded)
                writer.key("notificationUUID")
                writer.stringOrNull(notificationUUID)
                writer.key("bundleId")
                writer.string(target.bundleId)
                writer.key("environment")
                writer.string(target.environment.rawValue)
                writer.endObject()
                return .json(200, writer.bytes)
            }
        }
    }

    /// The app and store environment asked about, and its client.
    package struct Target {
        package var bundleId: String
        package var environment: AppStoreServerEnvironment
        package var client: AppStoreServerClient
    }

    /// The POST body: a JSON object (other fields ignored); empty means `{}`.
    package static func body(_ bytes: [UInt8]) throws(ServiceError) -> [String: JSONValue] {
        guard bytes.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else { return [:] }
        guard let value = try? JSONValue.parse(bytes), let fields = value.objectValue else {
            throw .invalidRequest("the body must be a JSON object {\"bundleId\"?, \"environment\"?}")
        }
        return fields
    }

    /// `environment`, when given: Production or Sandbox (the App Store Server API's two hosts).
    package static func environment(_ text: String?) throws(ServiceError) -> AppStoreServerEnvironment? {
        guard let text else { return nil }
        guard let environment = AppStoreServerEnvironment(rawValue: text) else {
            throw .invalidRequest("environment must be Production or Sandbox")
        }
        return environment
    }

    /// Apple's tokens as the client sends them: 1…128 letters, digits, `-` or `_` (OpenAPI says the same).
    package static func token(_ text: String) throws(ServiceError) -> String {
        let allowed = { (byte: UInt8) in
            byte == 0x2D || byte == 0x5F || (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte)
                || (0x61...0x7A).contains(byte)
        }
        guard !text.isEmpty, text.utf8.count <= 128, text.utf8.allSatisfy(allowed) else {
            throw .invalidRequest("token must be 1…128 letters, digits, - or _ (Apple's testNotificationToken)")
        }
        return text
    }

    /// Which app and environment: the ones named, else the only candidates (see the type's comment).
    package static func target(
        _ apps: [Configuration.App], bundleId: String?, environment: AppStoreServerEnvironment?
    ) throws(ServiceError) -> Target {
        let app: Configuration.App
        if let bundleId {
            guard let named = apps.first(where: { $0.bundleId == bundleId }) else {
                throw .unknownApp("bundleId \(bundleId) is not an app of this service's config")
            }
            app = named
        } else {
            let keyed = apps.filter { $0.serverAPI != nil }
            guard let only = keyed.first else {
                throw .serverAPINotConfigured(
                    "no app has a serverAPI key: the test notification is asked of Apple's App Store Server API")
            }
            guard keyed.count == 1 else {
                throw .invalidRequest(
                    "bundleId is required: \(keyed.map(\.bundleId).joined(separator: ", ")) have serverAPI keys")
            }
            app = only
        }
        guard let serverAPI = app.serverAPI else {
            throw .serverAPINotConfigured(
                "\(app.bundleId) has no serverAPI key (issuerId, keyId, privateKeyFile) configured")
        }
        let accepted = AppStoreServerEnvironment.allCases.filter { app.environments.contains($0.rawValue) }
        let chosen: AppStoreServerEnvironment
        if let environment {
            guard accepted.contains(environment) else {
                throw .wrongEnvironment(
                    "\(app.bundleId) does not accept \(environment.rawValue) "
                        + "(environments: \(app.environments.joined(separator: ", ")))")
            }
            chosen = environment
        } else {
            guard let only = accepted.first else {
                throw .wrongEnvironment(
                    "\(app.bundleId) accepts neither Production nor Sandbox, the App Store Server API's environments")
            }
            guard accepted.count == 1 else {
                throw .invalidRequest(
                    "environment is required: \(app.bundleId) accepts "
                        + accepted.map(\.rawValue).joined(separator: " and "))
            }
            chosen = only
        }
        return Target(bundleId: app.bundleId, environment: chosen, client: serverAPI.client(bundleId: app.bundleId))
    }

    /// The notificationUUID of the signedPayload in Apple's status answer, verified exactly as
    /// `POST /v1/notifications/apple` verifies it first: a payload that does not verify is not
    /// Apple's answer to trust (a proxy in between, a misconfigured root), so it is 502
    /// `apple_unavailable`, like any other answer of Apple's that cannot be read.
    package static func notificationUUID(_ signedPayload: String, ingestion: Ingestion) throws(ServiceError) -> String {
        let batch: FactBatch
        do {
            batch = try ingestion.verifyNotification(signedPayload)
        } catch {
            let why =
                if case .verificationFailed(let failure) = error {
                    "\(failure.reason.rawValue): \(failure.detail)"
                } else {
                    "\(error)"
                }
            throw .appleUnavailable(
                "Apple's test notification status carried a signedPayload that did not verify (\(why)); "
                    + "nothing in it is trusted")
        }
        guard let notification = batch.notification else {
            throw .appleUnavailable("Apple's test notification status carried a signedPayload that is no notification")
        }
        return notification.fact.notificationUUID
    }
}
