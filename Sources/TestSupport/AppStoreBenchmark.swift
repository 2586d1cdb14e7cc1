import AppStore
import Foundation

/// Throughput of signed-transaction verification, for `make bench` (not a test).
public enum AppStoreBenchmark {
    /// Verifies distinct freshly minted transactions on one thread with a warm chain cache for about
    /// `seconds`; returns verifications per second.
    public static func verifyThroughput(seconds: Double = 3, distinctVectors: Int = 512) -> Double {
        let vectors = TestVectors.shared
        let verifier = vectors.verifier()
        let jws = (0..<distinctVectors).map { _ in vectors.signedTransaction() }
        _ = try? verifier.verifyTransaction(jws[0])  // warm the chain cache
        var count = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let budget = UInt64(seconds * 1e9)
        var elapsed: UInt64 = 0
        while elapsed < budget {
            for token in jws {
                guard (try? verifier.verifyTransaction(token)) != nil else { preconditionFailure("bench vector rejected") }
            }
            count += jws.count
            elapsed = DispatchTime.now().uptimeNanoseconds - start
        }
        return Double(count) / (Double(elapsed) / 1e9)
    }
}
