import AppStore
import Foundation
import JSON
import Ledger
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// The document served at `/openapi.json` describes what the service really answers: a running
/// service (real PostgreSQL, the stand-in of Apple's Server API) is driven through every
/// documented operation with data that exercises the shapes — a subscription, a non-consumable,
/// a balance, a promotional grant on a user who bought nothing (its entitlement has no product
/// and no transaction), the change feed with grant and TEST changes, and the Apple-API answers
/// (sync, extend, test notification, reconcile, offers) — and every answer's status must be
/// documented for its operation and its JSON body must validate against the documented schema
/// (`JSONSchemaValidator`: a null where the document says string fails). Every documented
/// operation must have been answered 2xx at least once, so a new operation needs a call here.
@Suite(.tags(.database)) final class OpenAPIAnswersTests {
    let apple: AppleServerAPIStandIn
    let service: TestService
    let document: JSONValue
    private var exchanges: [Exchange] = []

    struct Exchange {
        var operation: String  // "GET /v1/users/{userId}"
        var target: String
        var response: ServiceHTTPClient.Response
    }

    init() throws {
        apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        var configuration = TestService.configuration()
        configuration.apps[0].serverAPI = Configuration.ServerAPI(
            issuerId: "issuer-test", keyId: "KEYTEST123", privateKeyPath: SyncTests.keyPath,
            key: AppStoreServerKey.testKey(), productionURL: apple.productionURL.absoluteString,
            sandboxURL: apple.sandboxURL.absoluteString)
        configuration.apps[0].retention = RetentionRules(rules: [
            .init(
                productId: nil, locale: "de", minTenureMonths: nil,
                action: .message(messageId: RetentionMessageTests.m1)),
            .init(
                productId: nil, locale: "fr", minTenureMonths: nil,
                action: .alternateProduct(productId: TestService.yearly, messageId: RetentionMessageTests.m2)),
            .init(
                productId: TestService.monthly, locale: nil, minTenureMonths: nil,
                action: .promotionalOffer(offerId: "stay50", messageId: nil)),
        ])
        configuration.reconcileIntervalSeconds = 0  // no background reconciler asking Apple meanwhile
        configuration.webhooks = [
            WebhookEndpoint(name: "backend", url: "http://127.0.0.1:9/hook", secret: WebhookTests.secret)
        ]
        service = try TestService(
            configuration: configuration, offerSigners: OfferRoutesTests.signers([TestService.bundleId]))
        document = try service.client(nil).get("/openapi.json").json
    }

    deinit {
        service.stop()
        apple.stop()
    }

    // MARK: Calls

    /// Sends one request to a documented operation and keeps the answer for the checks.
    @discardableResult
    func call(
        _ method: String, _ template: String, _ parameters: [String: String] = [:], query: String = "",
        body: JSONValue? = nil, scope: String? = "all", headers: [String: String] = [:]
    ) throws -> ServiceHTTPClient.Response {
        var target = template
        for (name, value) in parameters { target = target.replacingOccurrences(of: "{\(name)}", with: value) }
        if !query.isEmpty { target += "?" + query }
        let client = ServiceHTTPClient(port: service.app.port, apiKey: scope.flatMap { service.keys[$0] })
        let response = try client.request(method, target, headers: headers, body: body?.serialized())
        exchanges.append(Exchange(operation: "\(method) \(template)", target: target, response: response))
        return response
    }

    // MARK: The test

    @Test func everyOperationsAnswersAreWhatTheDocumentSays() throws {
        let now = TestVectors.nowMillis
        let monthly = Mint.transaction(
            "7300001", product: TestService.monthly, purchase: now - day, expires: now + 29 * day, signed: now - day)
        let removeAds = Mint.transaction(
            "7300002", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        let coins = Mint.transaction(
            "7300003", product: TestService.coins, type: "Consumable", purchase: now - day, expires: nil,
            signed: now - day)
        apple.sandbox.addTransaction(Mint.signed(monthly))

        // Purchases of every kind, a TEST notification, a debit.
        for fields in [monthly, removeAds, coins] {
            let answer = try call(
                "POST", "/v1/purchases", body: ["userId": "u-open", "signedTransaction": .string(Mint.signed(fields))])
            #expect(answer.status == 200, "\(answer.text)")
        }
        let test = try TestNotificationTests.testNotification()
        #expect(
            try call("POST", "/v1/notifications/apple", body: ["signedPayload": .string(test.jws)], scope: nil).status
                == 200)
        // Apple's Retention Messaging: each answer kind, and the empty one.
        for (locale, product) in [
            ("de-DE", TestService.monthly), ("fr-FR", TestService.monthly),
            ("en-US", TestService.monthly), ("en-US", TestService.yearly),
        ] {
            let asked = RetentionMessageTests.request(chain: "7300001", product: product, locale: locale, signed: now)
            let answer = try call(
                "POST", "/v1/apple/retention-message", body: ["signedPayload": .string(asked)], scope: nil)
            #expect(answer.status == 200, "\(answer.text)")
        }
        #expect(
            try call(
                "POST", "/v1/users/{userId}/balances/{currency}/debit", ["userId": "u-open", "currency": "coins"],
                body: ["amount": .int(10), "idempotencyKey": "d-1", "reason": "sword"]
            ).status == 200)

        // Grants: one on the buyer (an entitlement no product gives), one on a user with nothing else.
        let vip = try call(
            "POST", "/v1/users/{userId}/grants", ["userId": "u-open"],
            body: ["entitlement": "vip", "duration": "P7D", "reason": "support", "idempotencyKey": "g-1"])
        #expect(vip.status == 201, "\(vip.text)")
        let only = try call(
            "POST", "/v1/users/{userId}/grants", ["userId": "u-granted"],
            body: ["entitlement": "pro", "until": .string(RFC3339.format(now + 7 * day))])
        #expect(only.status == 201, "\(only.text)")
        #expect(
            only.json["customer"]?["entitlements"]?["pro"]?["productId"] == .null, "the shape under test: \(only.text)")
        try call(
            "POST", "/v1/users/{userId}/grants", ["userId": "u-open"],
            // duplicate: 200
            body: ["entitlement": "vip", "duration": "P7D", "reason": "support", "idempotencyKey": "g-1"])
        // A purchase by a user who has a grant: its answer's document carries the grant's entitlement.
        let more = Mint.transaction(
            "7300004", product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil,
            signed: now - hour)
        let after = try call(
            "POST", "/v1/purchases", body: ["userId": "u-granted", "signedTransaction": .string(Mint.signed(more))])
        #expect(after.status == 200, "\(after.text)")

        // appAccountTokens: minted (twice: the same), registered, and one taken by another user.
        let minted = try call("POST", "/v1/users/{userId}/app-account-token", ["userId": "u-open"], body: .object([:]))
        #expect(minted.status == 200, "\(minted.text)")
        #expect(
            try call("POST", "/v1/users/{userId}/app-account-token", ["userId": "u-open"], body: .object([:])).json
                == minted.json)
        let own = "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"
        #expect(
            try call(
                "POST", "/v1/users/{userId}/app-account-token", ["userId": "u-granted"],
                body: ["appAccountToken": .string(own)]
            ).status == 200)
        // An alias merged into a user (twice: the same), then read and debited through.
        let merged = try call("POST", "/v1/users/{userId}/aliases", ["userId": "u-merged"], body: ["alias": "u-anon"])
        #expect(merged.status == 200, "\(merged.text)")
        #expect(
            try call("POST", "/v1/users/{userId}/aliases", ["userId": "u-merged"], body: ["alias": "u-anon"]).status
                == 200)

        // An erasure (admin): of a user with a purchase of their own, and of an id never seen.
        #expect(
            try call(
                "POST", "/v1/purchases",
                body: [
                    "userId": "u-erased",
                    "signedTransaction": .string(
                        Mint.signed(
                            Mint.transaction(
                                "9100901", product: TestService.coins, type: "Consumable", purchase: now, expires: nil,
                                signed: now))),
                ]
            ).status == 200)
        #expect(try call("DELETE", "/v1/users/{userId}", ["userId": "u-erased"], scope: "admin").status == 200)
        #expect(try call("DELETE", "/v1/users/{userId}", ["userId": "u-nobody-2"], scope: "admin").status == 200)

        // Reads.
        for userId in ["u-open", "u-granted", "u-nobody"] {
            #expect(try call("GET", "/v1/users/{userId}", ["userId": userId], scope: "read").status == 200)
        }
        try call(
            "GET", "/v1/users/{userId}", ["userId": "u-open"], query: "asOf=" + RFC3339.format(now + hour),
            scope: "read")
        try call("GET", "/v1/users/{userId}/events", ["userId": "u-open"], query: "limit=1000", scope: "read")
        try call(
            "GET", "/v1/users/{userId}/events", ["userId": "u-open"], query: "before=9223372036854775807&limit=2",
            scope: "read")
        try call(
            "GET", "/v1/subscriptions/{originalTransactionId}", ["originalTransactionId": "7300001"], scope: "read")

        // Support lookups: each kind, an order at Apple's (recorded, nobody's), a token with no chain yet.
        let ordered = Mint.transaction(
            "7300005", product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil,
            signed: now - hour)
        apple.production.addTransaction(Mint.signed(ordered), orderId: "MK5OPENAPI")
        for query in [
            "transactionId=7300001", "originalTransactionId=7300001", "appAccountToken=" + own, "orderId=MK5OPENAPI",
        ] {
            let found = try call("GET", "/v1/lookup", query: query, scope: "read")
            #expect(found.status == 200, "\(query): \(found.text)")
        }
        try call("GET", "/v1/lookup", query: "transactionId=404404", scope: "read")  // 404
        try call("GET", "/v1/lookup", query: "transactionId=1&orderId=A", scope: "read")  // 400

        // The feed, once it shows the grants (a change is visible once its transaction is settled).
        try ChangeFeedTests.settle(service.conninfo)
        var feed = try call("GET", "/v1/changes", query: "limit=1000", scope: "read")
        try? eventually("the feed to show the grant and the test notification", within: 20) {
            feed = try call("GET", "/v1/changes", query: "limit=1000", scope: "read")
            let types = ChangeFeedTests.types(feed.json["changes"]?.arrayValue ?? [])
            return types.contains("PROMOTIONAL_GRANT") && types.contains("TEST")
        }
        let types = Set(ChangeFeedTests.types(feed.json["changes"]?.arrayValue ?? []))
        #expect(
            types.isSuperset(of: ["PROMOTIONAL_GRANT", "TEST", "BALANCE_DEBIT", "INITIAL_PURCHASE"]),
            "\(types.sorted())")
        try call("GET", "/v1/changes", query: "userId=u-granted&wait=1", scope: "read")

        // Apple's Server API (the stand-in): extend, sync, test notification, reconcile; offers.
        apple.sandbox.addTransaction(
            Mint.signed(
                Mint.transaction(
                    "7300001", product: TestService.monthly, purchase: now - day, expires: now + 36 * day, signed: now))
        )
        let extended = try call(
            "POST", "/v1/subscriptions/{originalTransactionId}/extend", ["originalTransactionId": "7300001"],
            body: ["days": .int(7), "reason": .int(3), "requestId": "outage-1"])
        #expect(extended.status == 200, "\(extended.text)")
        let history = SyncTests.coins("Production")
        apple.production.addTransaction(history)
        let synced = try call(
            "POST", "/v1/users/{userId}/sync", ["userId": "u-synced"],
            body: ["transactionId": .string(try SyncTests.transactionId(history))])
        #expect(synced.status == 200, "\(synced.text)")
        let requested = try call("POST", "/v1/admin/apple/test-notification", body: ["environment": "Production"])
        #expect(requested.status == 200, "\(requested.text)")
        let token = try #require(requested.json["testNotificationToken"]?.stringValue)
        apple.production.setTestNotificationStatus(
            token,
            TestNotificationStatus(
                signedPayload: test.jws,
                sendAttempts: [SendAttempt(attemptDate: now - 5_000, sendAttemptResult: "SUCCESS")]))
        #expect(
            try call(
                "GET", "/v1/admin/apple/test-notification/{token}", ["token": token], query: "environment=Production"
            ).status == 200)
        let pending = try #require(
            try call("POST", "/v1/admin/apple/test-notification", body: ["environment": "Production"])
                .json["testNotificationToken"]?.stringValue)
        try call(
            // nothing yet
            "GET", "/v1/admin/apple/test-notification/{token}", ["token": pending], query: "environment=Production")
        // remembered where it came from
        try call("GET", "/v1/admin/apple/test-notification/{token}", ["token": pending])
        apple.production.addNotification(ReconcileTests.notification("7300009"))
        let reconciled = try call(
            "POST", "/v1/admin/reconcile", body: ["since": .string(RFC3339.format(service.clock.now - hour))])
        #expect(reconciled.status == 200, "\(reconciled.text)")
        let signed = try call(
            "POST", "/v1/offers/signatures",
            body: [
                "productId": .string(TestService.monthly), "offerId": "winback", "userId": "u-open",
                "transactionId": "7300001",
            ])
        #expect(signed.status == 200, "\(signed.text)")
        // Set App Account Token (api.md §8) on a chain someone owns.
        #expect(
            try service.client().purchase(
                "u-token-set",
                Mint.signed(
                    Mint.transaction(
                        "7300001", product: TestService.monthly, purchase: now - day, expires: now + 36 * day,
                        signed: now))
            ).status == 200)
        let tokenSet = try call(
            "PUT", "/v1/subscriptions/{originalTransactionId}/app-account-token", ["originalTransactionId": "7300001"],
            body: ["appAccountToken": "3b1f0c2e-9d8a-4c6b-8e7f-1a2b3c4d5e6f"])
        #expect(tokenSet.status == 200, "\(tokenSet.text)")
        let eligible = try call(
            "GET", "/v1/users/{userId}/eligibility", ["userId": "u-token-set"],
            query: "productId=\(TestService.monthly)",
            scope: "read")
        #expect(eligible.status == 200, "\(eligible.text)")

        // Operations and admin reads.
        try call("GET", "/v1/admin/metrics/overview", query: "interval=day")
        try call("GET", "/v1/admin/catalog/unconfigured")
        try call("POST", "/v1/admin/replay", body: ["dryRun": .bool(true)])
        try call("GET", "/v1/admin/projections")
        try call("GET", "/v1/admin/webhooks")
        try call("GET", "/v1/admin/webhooks/{name}/deliveries", ["name": "backend"], query: "limit=10")
        try call("POST", "/v1/admin/webhooks/{name}/redeliver", ["name": "backend"], body: ["status": "dead"])
        let grantId = try #require(only.json["grantId"]?.stringValue)
        #expect(
            try call("DELETE", "/v1/users/{userId}/grants/{grantId}", ["userId": "u-granted", "grantId": grantId])
                .status == 200)
        for path in ["/healthz", "/readyz", "/metrics", "/openapi.json", "/console"] {
            try call("GET", path, scope: nil)
        }
        try call("GET", "/console/{asset}", ["asset": "app.js"], scope: nil)

        // Problems, whose bodies the document describes too.
        try call("POST", "/v1/purchases", body: ["userId": "u-open"])  // 400
        // 404
        try call("GET", "/v1/subscriptions/{originalTransactionId}", ["originalTransactionId": "404404"], scope: "read")
        try call(
            "POST", "/v1/users/{userId}/balances/{currency}/debit", ["userId": "u-open", "currency": "coins"],
            body: ["amount": .int(1_000_000), "idempotencyKey": "d-2"])  // 409 insufficient_balance
        try call("GET", "/v1/users/{userId}", ["userId": "u-open"], scope: nil)  // 401
        try call("POST", "/v1/purchases", body: ["userId": "u-open", "signedTransaction": "a.b.c"])  // 422
        try call(
            "DELETE", "/v1/users/{userId}/grants/{grantId}",
            ["userId": "u-granted", "grantId": "grt_" + String(repeating: "0", count: 32)])  // 404
        try call(
            "POST", "/v1/users/{userId}/app-account-token", ["userId": "u-open"],
            body: ["appAccountToken": .string(own.uppercased())])  // 409 app_account_token_taken
        try call(
            // 400
            "POST", "/v1/users/{userId}/app-account-token", ["userId": "u-open"], body: ["appAccountToken": "nope"])
        // 409 alias_conflict
        try call("POST", "/v1/users/{userId}/aliases", ["userId": "u-other"], body: ["alias": "u-anon"])
        try call("POST", "/v1/users/{userId}/aliases", ["userId": "u-other"], body: ["alias": "u-other"])  // 400

        let problems = check()
        #expect(
            problems.isEmpty,
            "\(problems.count) answers disagree with the document:\n\(problems.joined(separator: "\n"))")
    }

    // MARK: Checks

    /// What disagrees: undocumented statuses, bodies that break their schema, media types the
    /// document does not list, and documented operations never answered 2xx.
    func check() -> [String] {
        let validator = JSONSchemaValidator(root: document)
        var problems: [String] = []
        var answered: Set<String> = []
        for exchange in exchanges {
            let (method, template) = exchange.operation.split(separator: " ", maxSplits: 1).map(String.init).pair
            let name = "\(exchange.operation) (\(exchange.target)) \(exchange.response.status)"
            guard let operation = document["paths"]?[template]?[method.lowercased()] else {
                problems.append("\(name): not a documented operation")
                continue
            }
            let status = String(exchange.response.status)
            guard let documented = operation["responses"]?[status].map(resolve) else {
                problems.append("\(name): status not documented \(exchange.response.text.prefix(200))")
                continue
            }
            if (200..<300).contains(exchange.response.status) { answered.insert(exchange.operation) }
            let mediaType =
                (exchange.response.headers["content-type"] ?? "").split(separator: ";").first
                .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            let isJSON = mediaType == "application/json" || mediaType == "application/problem+json"
            guard let content = documented["content"]?.objectValue else {
                if isJSON && !exchange.response.body.isEmpty {
                    problems.append("\(name): answers \(mediaType), the document describes no content")
                }
                continue
            }
            guard let media = content[mediaType] else {
                problems.append("\(name): answers \(mediaType), the document lists \(content.keys.sorted())")
                continue
            }
            guard isJSON else { continue }
            guard let body = try? JSONValue.parse(exchange.response.body) else {
                problems.append("\(name): the body is not JSON")
                continue
            }
            guard let schema = media["schema"] else {
                problems.append("\(name): \(mediaType) documented without a schema")
                continue
            }
            problems += validator.errors(body, schema).map { "\(name): \($0)" }
        }
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            for method in (item.objectValue ?? [:]).keys where OpenAPITests.methods.contains(method) {
                let operation = "\(method.uppercased()) \(path)"
                if !answered.contains(operation) {
                    problems.append("\(operation): never answered 2xx here; add a call")
                }
            }
        }
        return problems.sorted()
    }

    func resolve(_ node: JSONValue) -> JSONValue {
        guard let reference = node["$ref"]?.stringValue,
            let target = JSONSchemaValidator(root: document).resolve(reference)
        else { return node }
        return resolve(target)
    }
}

extension Array where Element == String {
    /// The first two elements (a method and a path).
    fileprivate var pair: (String, String) { (self[0], count > 1 ? self[1] : "") }
}
