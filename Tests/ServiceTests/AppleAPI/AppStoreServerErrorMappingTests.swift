import AppStore
import HTTP
import JSON
import Testing

@testable import Infrastructure
@testable import Service

/// The Server API client's typed errors as the API answers them (docs/api.md §5).
@Suite struct AppStoreServerErrorMappingTests {
    static func problem(_ error: AppStoreServerError) throws -> (Int, JSONValue) {
        let response = ErrorMapping.answer(.appStoreServer(error), requestId: "req-1", logger: .silent)
        return (response.status, try JSONValue.parse(response.body))
    }

    @Test func rejectedIs422WithApplesCode() throws {
        let (status, body) = try Self.problem(
            .rejected(status: 404, errorCode: 4_040_010, errorMessage: "Transaction id not found."))
        #expect(status == 422)
        #expect(body["code"] == "apple_rejected")
        #expect(body["appleErrorCode"] == .int(4_040_010))
        let (_, tokenRefused) = try Self.problem(.rejected(status: 401, errorCode: nil, errorMessage: nil))
        #expect(tokenRefused["appleErrorCode"] == .null)
    }

    @Test func unavailableAndMalformedAre502() throws {
        for error in [AppStoreServerError.unavailable("HTTP 503"), .malformedResponse("not JSON")] {
            let (status, body) = try Self.problem(error)
            #expect(status == 502)
            #expect(body["code"] == "apple_unavailable")
        }
        let (status, body) = try Self.problem(.invalidArgument("transactionId must be digits"))
        #expect(status == 400)
        #expect(body["code"] == "invalid_request")
    }
}
