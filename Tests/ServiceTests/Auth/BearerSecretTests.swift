import Testing

@testable import Infrastructure

/// How a key is read out of `Authorization` (RFC 6750 §2.1: the scheme is case-insensitive).
@Suite struct BearerSecretTests {
    @Test(arguments: [
        ("Bearer iap_abc123", "iap_abc123"), ("bearer iap_abc123", "iap_abc123"), ("BEARER iap_x", "iap_x"),
        ("Bearer   iap_abc123 \t", "iap_abc123"), ("Bearer \tiap_a b", "iap_a b"),
    ])
    func readsTheKeyAfterTheScheme(header: String, key: String) {
        #expect(KeyAuthenticator.bearerSecret(authorization: header) == key)
    }

    @Test(arguments: [
        "Bearer ", "Bearer    ", "Bearer \t ", "Basic dXNlcjpwYXNz", "Bearer", "iap_abc123", "Bearerx iap_a",
    ])
    func refusesAnythingElse(header: String) {
        #expect(KeyAuthenticator.bearerSecret(authorization: header) == nil)
    }

    @Test func refusesNoHeader() {
        #expect(KeyAuthenticator.bearerSecret(authorization: nil) == nil)
    }
}
