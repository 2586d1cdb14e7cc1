import Foundation
import JSON
import TestSupport
import Testing

@testable import AppStore

/// Vectors minted with the test PKI: each defect is rejected with its own reason.
@Suite struct MintedVectorsTests {
    let vectors = TestVectors.shared
    var verifier: SignedDataVerifier { vectors.verifier() }

    /// Replaces one of the three segments of `jws`.
    func replacing(_ jws: String, segment: Int, with text: String) -> String {
        var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[segment] = text
        return parts.joined(separator: ".")
    }

    func signer(key: String = "testLeaf.key", chain: [[UInt8]]) throws -> JWSSigner {
        let pem = try Fixture.text("test-pki/\(key)")
        return try JWSSigner(privateKeyPEM: pem, chainDER: chain)
    }

    func pem(_ name: String) throws -> [UInt8] {
        try TestVectors.certificate(Fixture.apple.appendingPathComponent("test-pki/\(name)"))
    }

    @Test func validMintedDataVerifiesAndDecodes() throws {
        let t = try verifier.verifyTransaction(vectors.signedTransaction(["productId": .string("com.example.gold")]))
        #expect(t.productId == "com.example.gold")
        #expect(t.price == 9990)
        let r = try verifier.verifyRenewalInfo(vectors.signedRenewalInfo(["autoRenewStatus": .number("0")]))
        #expect(r.autoRenewStatus == 0)
        let n = try verifier.verifyNotification(
            vectors.signedNotification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: ["transactionId": .string("42")], renewal: [:])
        )
        #expect(n.payload.subtype == "INITIAL_BUY")
        #expect(n.transaction?.transactionId == "42")
        #expect(n.renewalInfo?.originalTransactionId == n.transaction?.originalTransactionId)
    }

    @Test func payloadBytesAreKeptExactlyAsSigned() throws {
        let payload = vectors.transactionPayload()
        let t = try verifier.verifyTransaction(vectors.sign(payload))
        #expect(t.rawJSON == payload.serialized())
    }

    @Test func tamperedPayloadIsASignatureMismatch() throws {
        let jws = vectors.signedTransaction()
        let other = JWSSigner.base64URL(vectors.transactionPayload(["price": .number("1")]).serialized())
        #expect(
            rejection { _ = try verifier.verifyTransaction(replacing(jws, segment: 1, with: other)) }
                == .signatureMismatch)
    }

    @Test func flippedSignatureIsASignatureMismatch() throws {
        let jws = vectors.signedTransaction()
        var sig = try #require(Base64.decodeURL(jws.split(separator: ".")[2]))
        sig[10] ^= 0x01
        let flipped = replacing(jws, segment: 2, with: JWSSigner.base64URL(sig))
        #expect(rejection { _ = try verifier.verifyTransaction(flipped) } == .signatureMismatch)
        let short = replacing(jws, segment: 2, with: JWSSigner.base64URL(sig.prefix(63)))
        #expect(rejection { _ = try verifier.verifyTransaction(short) } == .signatureMismatch)
    }

    @Test func foreignRootIsAnInvalidChain() throws {
        let g3Only = try SignedDataVerifier(apps: [
            AppIdentity(bundleId: "com.example", appAppleId: 1, environments: ["Sandbox"])
        ])
        #expect(rejection { _ = try g3Only.verifyTransaction(vectors.signedTransaction()) } == .invalidChain)
    }

    @Test func missingAppleOIDsAreInvalidCertificates() throws {
        let root = vectors.rootDER
        let badLeaf = try signer(chain: [try pem("testInvalidOIDLeaf.pem"), vectors.intermediateDER, root])
        let payload = vectors.transactionPayload().serialized()
        #expect(rejection { _ = try verifier.verifyTransaction(badLeaf.sign(payload: payload)) } == .invalidCertificate)
        let badIntermediate = try signer(chain: [vectors.leafDER, try pem("testInvalidOIDIntermediate.pem"), root])
        #expect(
            rejection { _ = try verifier.verifyTransaction(badIntermediate.sign(payload: payload)) }
                == .invalidCertificate)
    }

    @Test func leafOutsideItsValidityAtSignedDateIsAnInvalidChain() throws {
        // The test leaf is valid 2023-01-05 → 2033-01-01.
        let expired = vectors.signedTransaction(["signedDate": .number("2000000000000")])  // 2033-05-18
        #expect(rejection { _ = try verifier.verifyTransaction(expired) } == .invalidChain)
        let early = vectors.signedTransaction(["signedDate": .number("1600000000000")])  // 2020
        #expect(rejection { _ = try verifier.verifyTransaction(early) } == .invalidChain)
    }

    @Test func cachedChainStillHonoursEachPayloadsDate() throws {
        let v = verifier
        _ = try v.verifyTransaction(vectors.signedTransaction())
        #expect(v.cache.count == 1)
        let expired = vectors.signedTransaction(["signedDate": .number("2000000000000")])
        #expect(rejection { _ = try v.verifyTransaction(expired) } == .invalidChain)
        _ = try v.verifyTransaction(vectors.signedTransaction())
    }

    @Test func twoCertificateChainIsAnInvalidChain() throws {
        let short = try signer(chain: [vectors.leafDER, vectors.intermediateDER])
        #expect(
            rejection {
                _ = try verifier.verifyTransaction(short.sign(payload: vectors.transactionPayload().serialized()))
            }
                == .invalidChain)
    }

    @Test func leafSignedDirectlyByRootIsAnInvalidChain() throws {
        // x5c[1] is not the leaf's issuer: the path cannot be built through it.
        let swapped = try signer(chain: [vectors.leafDER, vectors.rootDER, vectors.rootDER])
        #expect(
            rejection {
                _ = try verifier.verifyTransaction(swapped.sign(payload: vectors.transactionPayload().serialized()))
            }
                == .invalidChain)
    }

    @Test func missingX5cIsMalformed() throws {
        let header = Array(#"{"alg":"ES256"}"#.utf8)
        let jws = vectors.signer.sign(payload: vectors.transactionPayload().serialized(), header: header)
        #expect(rejection { _ = try verifier.verifyTransaction(jws) } == .malformed)
    }

    @Test func algNoneAndHS256AreUnsupportedAlgorithms() throws {
        let payload = vectors.transactionPayload().serialized()
        for alg in ["none", "HS256", "RS256", "ES384"] {
            var header = String(decoding: vectors.signer.defaultHeader, as: UTF8.self)
            header = header.replacingOccurrences(of: "\"ES256\"", with: "\"\(alg)\"")
            let jws = vectors.signer.sign(payload: payload, header: Array(header.utf8))
            #expect(rejection { _ = try verifier.verifyTransaction(jws) } == .unsupportedAlgorithm)
        }
        let unsecured = JWSSigner.base64URL(Array(#"{"alg":"none"}"#.utf8)) + "." + JWSSigner.base64URL(payload) + "."
        #expect(rejection { _ = try verifier.verifyTransaction(unsecured) } == .unsupportedAlgorithm)
    }

    @Test func garbageBase64IsMalformed() throws {
        let jws = vectors.signedTransaction()
        #expect(
            rejection { _ = try verifier.verifyTransaction(replacing(jws, segment: 1, with: "!!!not base64")) }
                == .malformed)
        #expect(
            rejection { _ = try verifier.verifyTransaction(replacing(jws, segment: 0, with: "e30*")) } == .malformed)
        #expect(rejection { _ = try verifier.verifyTransaction(replacing(jws, segment: 2, with: "%%")) } == .malformed)
        #expect(
            rejection {
                _ = try verifier.verifyTransaction(
                    replacing(jws, segment: 1, with: JWSSigner.base64URL(Array("[1,2".utf8))))
            }
                == .malformed)
    }

    @Test func garbageCertificateIsAnInvalidCertificate() throws {
        let header = #"{"alg":"ES256","x5c":["AAAA","AAAA","AAAA"]}"#
        let jws = vectors.signer.sign(payload: vectors.transactionPayload().serialized(), header: Array(header.utf8))
        #expect(rejection { _ = try verifier.verifyTransaction(jws) } == .invalidCertificate)
        let notBase64 = #"{"alg":"ES256","x5c":["$$","AAAA","AAAA"]}"#
        let jws2 = vectors.signer.sign(
            payload: vectors.transactionPayload().serialized(), header: Array(notBase64.utf8))
        #expect(rejection { _ = try verifier.verifyTransaction(jws2) } == .invalidCertificate)
    }

    @Test func wrongBundleIsAnUnknownApp() throws {
        #expect(
            rejection {
                _ = try verifier.verifyTransaction(vectors.signedTransaction(["bundleId": .string("com.other")]))
            }
                == .unknownApp)
        #expect(
            rejection { _ = try verifier.verifyTransaction(vectors.signedTransaction(["bundleId": .null])) }
                == .unknownApp)
        #expect(
            rejection {
                _ = try verifier.verifyNotification(
                    vectors.signedNotification(
                        type: "TEST", transaction: nil,
                        data: ["bundleId": .string("com.other")]))
            } == .unknownApp)
    }

    @Test func wrongEnvironmentIsRejected() throws {
        let sandboxOnly = vectors.verifier(environments: ["Sandbox"])
        let production = vectors.signedTransaction(["environment": .string("Production")])
        #expect(rejection { _ = try sandboxOnly.verifyTransaction(production) } == .wrongEnvironment)
        #expect(
            rejection {
                _ = try sandboxOnly.verifyRenewalInfo(vectors.signedRenewalInfo(["environment": .string("Production")]))
            }
                == .wrongEnvironment)
        // Claiming Xcode (which skips cryptography) is refused unless Xcode is configured.
        #expect(
            rejection {
                _ = try sandboxOnly.verifyTransaction(vectors.signedTransaction(["environment": .string("Xcode")]))
            }
                == .wrongEnvironment)
    }

    @Test func productionNotificationNeedsTheAppsAppleId() throws {
        let ok = vectors.signedNotification(type: "DID_RENEW", transaction: ["environment": .string("Production")])
        #expect(try verifier.verifyNotification(ok).payload.data?.appAppleId == 1234)
        let other = vectors.signedNotification(
            type: "DID_RENEW", transaction: ["environment": .string("Production")],
            data: ["appAppleId": .number("99")])
        #expect(rejection { _ = try verifier.verifyNotification(other) } == .unknownApp)
        let missing = vectors.signedNotification(
            type: "DID_RENEW", transaction: ["environment": .string("Production")],
            data: ["appAppleId": .null])
        #expect(rejection { _ = try verifier.verifyNotification(missing) } == .unknownApp)
    }

    @Test func nestedTransactionOfANotificationIsVerifiedToo() throws {
        let nested = replacing(
            vectors.signedTransaction(), segment: 2, with: JWSSigner.base64URL([UInt8](repeating: 1, count: 64)))
        let n = vectors.signedNotification(
            type: "DID_RENEW", transaction: nil, data: ["signedTransactionInfo": .string(nested)])
        #expect(rejection { _ = try verifier.verifyNotification(n) } == .signatureMismatch)
        let foreign = vectors.signedNotification(type: "DID_RENEW", transaction: ["bundleId": .string("com.other")])
        #expect(rejection { _ = try verifier.verifyNotification(foreign) } == .unknownApp)
    }

    @Test func concurrentVerificationsShareOneVerifier() async throws {
        let v = verifier
        let tokens = (0..<64).map { _ in vectors.signedTransaction() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for chunk in 0..<4 {
                group.addTask {
                    for token in tokens[(chunk * 16)..<(chunk * 16 + 16)] { _ = try v.verifyTransaction(token) }
                }
            }
            try await group.waitForAll()
        }
        #expect(v.cache.count == 1)
    }
}
