import Foundation
import JSON
import TestSupport
import Testing

@testable import AppStore

/// Retention Messaging requests verified as Apple's `verifyAndDecodeRealtimeRequest` does
/// (app-store-server-library-swift 8468d10, `SignedDataVerifier.swift`).
@Suite struct RealtimeRequestTests {
    static let vectors = TestVectors.shared

    static func payload(_ overrides: [String: JSONValue] = [:]) -> JSONValue {
        var fields: [String: JSONValue] = [
            "originalTransactionId": "99371282", "appAppleId": .int(TestVectors.appAppleId),
            "productId": "com.example.product", "userLocale": "en-US",
            "requestIdentifier": "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9", "environment": "Sandbox",
            "signedDate": .int(TestVectors.nowMillis),
        ]
        for (key, value) in overrides {
            if value.isNull { fields[key] = nil } else { fields[key] = value }
        }
        return .object(fields)
    }

    /// Apple's own model fixture (`decodedRealtimeRequest.json`, LocalTesting: no chain) decodes
    /// every field of `DecodedRealtimeRequestBody`.
    @Test func applesFixtureDecodesEveryField() throws {
        let verifier = try SignedDataVerifier(
            trustedRootsDER: [Self.vectors.rootDER],
            apps: [AppIdentity(bundleId: "com.example", appAppleId: nil, environments: ["LocalTesting"])])
        let signer = try JWSSigner(
            privateKeyPEM: try Fixture.text("test-resources/certs/testSigningKey.p8"), chainDER: [])
        let request = try verifier.verifyRealtimeRequest(
            signer.sign(payload: try Fixture.bytes("test-resources/models/decodedRealtimeRequest.json")))
        #expect(request.originalTransactionId == "99371282")
        #expect(request.appAppleId == 531_412)
        #expect(request.productId == "com.example.product")
        #expect(request.userLocale == "en-US")
        #expect(request.requestIdentifier == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9")
        #expect(request.environment == "LocalTesting")
        #expect(request.signedDate == 1_698_148_900_000)
        #expect(request.bundleId == "com.example")
    }

    @Test func aSignedRequestForTheAppVerifiesAndNamesTheApp() throws {
        let request = try Self.vectors.verifier().verifyRealtimeRequest(Self.vectors.sign(Self.payload()))
        #expect(request.bundleId == TestVectors.bundleId)
        #expect(request.originalTransactionId == "99371282")
    }

    @Test(arguments: [
        // Apple: a Production verifier refuses another appAppleId (INVALID_APP_IDENTIFIER)...
        (
            ["environment": "Production", "appAppleId": .int(9999)] as [String: JSONValue],
            VerificationError.Reason.unknownApp
        ),
        // ...and any environment but its own (INVALID_ENVIRONMENT).
        (["environment": "Sandbox"], .wrongEnvironment),
        // Every field of DecodedRealtimeRequestBody is required, requestIdentifier a UUID.
        (["userLocale": .null], .malformed),
        (["requestIdentifier": "not-a-uuid"], .malformed),
        (["appAppleId": .null], .malformed),
    ])
    func refusedAsApplesVerifierRefuses(overrides: [String: JSONValue], reason: VerificationError.Reason) throws {
        let verifier = Self.vectors.verifier(environments: ["Production"])
        #expect {
            _ = try verifier.verifyRealtimeRequest(Self.vectors.sign(Self.payload(overrides)))
        } throws: { error in
            (error as? VerificationError)?.reason == reason
        }
    }

    /// Outside Production Apple's verifier does not compare appAppleId.
    @Test func aSandboxRequestIsNotHeldToTheAppAppleId() throws {
        let request = try Self.vectors.verifier(environments: ["Sandbox"])
            .verifyRealtimeRequest(Self.vectors.sign(Self.payload(["appAppleId": .int(9999)])))
        #expect(request.bundleId == TestVectors.bundleId)
    }

    @Test func aRequestSignedByAnotherKeyIsRefused() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let pem = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let foreign = try JWSSigner(
            privateKeyPEM: pem, chainDER: [Self.vectors.leafDER, Self.vectors.intermediateDER, Self.vectors.rootDER])
        #expect(throws: VerificationError.self) {
            _ = try Self.vectors.verifier().verifyRealtimeRequest(foreign.sign(payload: Self.payload().serialized()))
        }
    }
}
