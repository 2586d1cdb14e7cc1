import TestSupport
import Testing

@testable import AppStore

/// Random byte flips, truncations, deletions and insertions of valid vectors are rejected with a
/// `VerificationError` or verify to the very same result; nothing crashes.
@Suite struct MutationTests {
    static func mutate(_ original: [UInt8], using rng: inout SplitMix64) -> [UInt8] {
        var bytes = original
        let i = Int.random(in: 0..<bytes.count, using: &rng)
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: bytes[i] ^= UInt8.random(in: 1...255, using: &rng)
        case 1: bytes.removeSubrange(i...)
        case 2: bytes.remove(at: i)
        default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: i)
        }
        return bytes
    }

    @Test func mutatedTransactionsAreRejectedOrIdentical() throws {
        let vectors = TestVectors.shared
        let verifier = vectors.verifier()
        let originals =
            (0..<4).map { _ in vectors.signedTransaction() }
            + [try Fixture.text("test-resources/mock_signed_data/transactionInfo")]
        var rng = SplitMix64(seed: 0x1A9_1ED6E5)
        var rejected = 0
        for original in originals {
            let expected = try verifier.verifyTransaction(original)
            for _ in 0..<500 {
                let mutated = String(decoding: Self.mutate(Array(original.utf8), using: &rng), as: UTF8.self)
                do {
                    #expect(try verifier.verifyTransaction(mutated) == expected)
                } catch { rejected += 1 }
            }
        }
        #expect(rejected > 2000)
    }

    @Test func mutatedNotificationsAreRejectedOrIdentical() throws {
        let vectors = TestVectors.shared
        let verifier = vectors.verifier()
        let original = vectors.signedNotification(type: "DID_RENEW", transaction: [:], renewal: [:])
        let expected = try verifier.verifyNotification(original)
        var rng = SplitMix64(seed: 42)
        for _ in 0..<1500 {
            let mutated = String(decoding: Self.mutate(Array(original.utf8), using: &rng), as: UTF8.self)
            do {
                #expect(try verifier.verifyNotification(mutated) == expected)
            } catch {}
        }
        let renewal = vectors.signedRenewalInfo()
        let expectedRenewal = try verifier.verifyRenewalInfo(renewal)
        for _ in 0..<500 {
            let mutated = String(decoding: Self.mutate(Array(renewal.utf8), using: &rng), as: UTF8.self)
            do {
                #expect(try verifier.verifyRenewalInfo(mutated) == expectedRenewal)
            } catch {}
        }
    }
}
