import EventStore
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// Every route maps a failed use case the same way (`ErrorMapping`): a conflict that outlived the
/// unit of work's retries is 409 `conflict`, an unexpected error 500 `internal_error`, each with
/// a log line naming the request id; an admin route answers exactly as an API route does.
@Suite(.tags(.database)) final class ErrorMappingTests {
    let service: TestService

    init() throws { service = try TestService() }

    deinit { service.stop() }

    /// Makes every append fail in the database with `sqlState` (until `restore`): IC001 is the
    /// newer-catalog-in-force check, which the service treats as a conflict and retries.
    func failAppends(_ sqlState: String) throws {
        let connection = try Connection(service.conninfo)
        _ = try connection.execute(
            """
            CREATE OR REPLACE FUNCTION public.test_fail_append() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'refused by ErrorMappingTests' USING ERRCODE = '\(sqlState)'; END $$
            """)
        _ = try connection.execute(
            """
            CREATE TRIGGER test_fail_append BEFORE INSERT ON es.events
            FOR EACH ROW EXECUTE FUNCTION public.test_fail_append()
            """)
    }

    func restore() throws {
        _ = try Connection(service.conninfo).execute("DROP TRIGGER test_fail_append ON es.events")
    }

    func grant(_ userId: String, requestId: String) throws -> ServiceHTTPClient.Response {
        try service.client("admin").post(
            "/v1/users/\(userId)/grants", ["entitlement": "pro", "duration": "P7D", "idempotencyKey": "k-1"],
            headers: ["X-Request-Id": requestId])
    }

    @Test func anAdminOperationThatConflictsAnswers409ConflictAndIsLogged() throws {
        try failAppends(CatalogVersions.staleVersionState)
        let response = try grant("u-conflict", requestId: "req-admin-conflict")
        #expect(response.status == 409, "\(response.text)")
        #expect(response.headers["content-type"] == "application/problem+json")
        #expect(response.json["code"]?.stringValue == "conflict")
        #expect(response.json["status"]?.int64Value == 409)
        #expect(response.json["requestId"]?.stringValue == "req-admin-conflict")
        #expect(response.headers["retry-after"] == "1")
        let line = service.log.text.split(separator: "\n").first {
            $0.contains("req-admin-conflict") && $0.contains("conflicted")
        }
        #expect(line != nil, "a log line names the request id:\n\(service.log.text)")

        // Nothing was recorded; once the writers stop winning, the same request goes through.
        try restore()
        let again = try grant("u-conflict", requestId: "req-admin-after")
        #expect(again.status == 201, "\(again.text)")
    }

    @Test func anAPIOperationThatConflictsAnswersTheSame() throws {
        let coins = TestVectors.shared.signedTransaction([
            "transactionId": "8200001", "originalTransactionId": "8200001", "productId": .string(TestService.coins),
            "type": "Consumable", "expiresDate": .null,
        ])
        #expect(try service.client().purchase("u-api-conflict", coins).status == 200)
        try failAppends(CatalogVersions.staleVersionState)
        let response = try service.client().post(
            "/v1/users/u-api-conflict/balances/coins/debit", ["amount": .int(1), "idempotencyKey": "d-1"],
            headers: ["X-Request-Id": "req-api-conflict"])
        #expect(response.status == 409, "\(response.text)")
        #expect(response.json["code"]?.stringValue == "conflict")
        #expect(response.json["requestId"]?.stringValue == "req-api-conflict")
        #expect(service.log.text.contains("req-api-conflict"))
    }

    @Test func anUnexpectedErrorInAnAdminOperationAnswers500AndIsLoggedWithTheRequestId() throws {
        try failAppends("P0001")
        let response = try grant("u-broken", requestId: "req-admin-broken")
        #expect(response.status == 500, "\(response.text)")
        #expect(response.json["code"]?.stringValue == "internal_error")
        #expect(response.json["requestId"]?.stringValue == "req-admin-broken")
        #expect(response.json["detail"]?.stringValue?.contains("req-admin-broken") == true)
        #expect(response.text.contains("refused by ErrorMappingTests") == false, "details stay in the log")
        let line = service.log.text.split(separator: "\n").first {
            $0.contains("req-admin-broken") && $0.contains("request failed")
        }
        #expect(line?.contains("refused by ErrorMappingTests") == true, "the log has the cause:\n\(service.log.text)")
    }

    /// A statement that waited past the statement timeout (57014: for a lock the log migration
    /// holds, say) or a lock timeout (55P03) rolled back: nothing recorded, retry — 503, not 500.
    @Test(arguments: ["57014", "55P03"]) func aStatementThatTimedOutAnswers503StoreUnavailable(sqlState: String) throws
    {
        try failAppends(sqlState)
        let response = try grant("u-timeout", requestId: "req-timeout")
        #expect(response.status == 503, "\(response.text)")
        #expect(response.json["code"]?.stringValue == "store_unavailable")
        #expect(response.headers["retry-after"] == "1")
        #expect(service.log.text.contains("req-timeout"))
        try restore()
        #expect(try grant("u-timeout", requestId: "req-timeout-after").status == 201)
    }
}
