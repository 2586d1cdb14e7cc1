import AppStore
import EventStore
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// API keys and scopes (docs/api.md §2: read = GET user data, write = ingest and debit, admin =
/// replay, keys, projections) and the notification endpoint's only gate: Apple's signature.
@Suite(.tags(.database)) final class AuthTests {
    let service: TestService

    init() throws { service = try TestService() }

    deinit { service.stop() }

    /// Each data route with a request that would succeed given the right key.
    var calls: [(scope: String, method: String, target: String, body: JSONValue?)] {
        let now = service.clock.now
        let signed = Mint.signed(
            Mint.transaction(
                "5000001", product: TestService.removeAds, type: "Non-Consumable", purchase: now - day, expires: nil,
                signed: now - day))
        var calls: [(scope: String, method: String, target: String, body: JSONValue?)] = [
            ("write", "POST", "/v1/purchases", .object(["userId": "u-auth", "signedTransaction": .string(signed)])),
            (
                "write", "POST", "/v1/users/u-auth/balances/coins/debit",
                .object(["amount": .number("1"), "idempotencyKey": "k-1"])
            ),
            ("read", "GET", "/v1/users/u-auth", nil),
            ("read", "GET", "/v1/users/u-auth/events", nil),
            ("read", "GET", "/v1/subscriptions/5000001", nil),
        ]
        for route in service.app.routes where route.scope == "admin" {
            calls.append(
                ("admin", route.method, route.pattern, route.method == "POST" ? .object(["dryRun": .bool(true)]) : nil))
        }
        return calls
    }

    func send(_ client: ServiceHTTPClient, _ call: (scope: String, method: String, target: String, body: JSONValue?))
        throws -> ServiceHTTPClient.Response
    {
        try client.request(call.method, call.target, body: call.body?.serialized())
    }

    @Test func withoutAValidKeyEveryDataRouteAnswers401() throws {
        for key in [nil, "iap_0000", "not-a-key", ""] as [String?] {
            let client = ServiceHTTPClient(port: service.app.port, apiKey: key)
            for call in calls {
                let response = try send(client, call)
                #expect(response.status == 401, "\(call.method) \(call.target) with \(key ?? "no key")")
                #expect(response.json["code"]?.stringValue == "unauthorized")
                #expect(response.headers["www-authenticate"] == "Bearer")
                #expect(response.headers["content-type"] == "application/problem+json")
            }
        }
    }

    @Test func eachScopeOpensOnlyItsRoutes() throws {
        for scope in ["read", "write", "admin"] {
            let client = service.client(scope)
            for call in calls where call.scope != scope {
                let response = try send(client, call)
                #expect(response.status == 403, "\(scope) key on \(call.method) \(call.target): \(response.status)")
                #expect(response.json["code"]?.stringValue == "forbidden")
            }
        }
        for call in calls {
            let response = try send(service.client(call.scope), call)
            #expect(
                response.status != 401 && response.status != 403, "\(call.scope) key on \(call.method) \(call.target)")
        }
        #expect(
            try service.client("write").purchase(
                "u-auth-2",
                Mint.signed(
                    Mint.transaction(
                        "5000002", product: TestService.removeAds, type: "Non-Consumable",
                        purchase: service.clock.now - day,
                        expires: nil, signed: service.clock.now - day))
            ).status == 200)
        #expect(
            try service.client("read").get("/v1/users/u-auth-2").json["entitlements"]?["no_ads"]?["active"]?.boolValue
                == true)
    }

    @Test func notificationsNeedNoKeyButOnlyTrustedSignaturesGetIn() throws {
        let api = service.client(nil)
        let now = service.clock.now
        let transaction = Mint.transaction(
            "5000101", product: TestService.monthly, purchase: now - day, expires: now + day, signed: now - day)
        #expect(try api.notify(Mint.notification("SUBSCRIBED", "INITIAL_BUY", transaction: transaction)).status == 200)

        // A service that trusts only Apple's real root refuses the test PKI: a foreign root.
        let appleOnly = try TestService(configuration: TestService.configuration(trustedRoots: [AppleRoots.g3DER]))
        defer { appleOnly.stop() }
        let foreign = try appleOnly.client(nil).notify(
            Mint.notification("SUBSCRIBED", "INITIAL_BUY", transaction: transaction))
        #expect(foreign.status == 422)
        #expect(foreign.json["code"]?.stringValue == "verification_failed")
        #expect(foreign.json["reason"]?.stringValue == "invalid_chain")
        #expect(
            try appleOnly.client("write").purchase("u-foreign", Mint.signed(transaction)).json["reason"]?.stringValue
                == "invalid_chain")
        #expect(try storedEventCount(appleOnly) == 0)
    }
}

/// Ledger events in the service's log (as the admin role), to prove nothing was appended
/// (the catalog version the service recorded at start is on a stream of its own).
func storedEventCount(_ service: TestService) throws -> Int {
    let connection = try Connection(service.conninfo)
    let rows = try connection.query("SELECT count(*) FROM es.events WHERE stream_id <> 'catalog'", [])
    return Int(rows[0, 0] ?? "") ?? -1
}
