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
                guard (try? verifier.verifyTransaction(token)) != nil else {
                    preconditionFailure("bench vector rejected")
                }
            }
            count += jws.count
            elapsed = DispatchTime.now().uptimeNanoseconds - start
        }
        return Double(count) / (Double(elapsed) / 1e9)
    }

    /// Verifications per CPU-second of this process (user + system), over `count` warm-cache
    /// verifications: the same unit `openssl speed` reports, and steadier than wall-clock rates
    /// on a shared machine.
    public static func verifyPerCPUSecond(count: Int = 30_000, distinctVectors: Int = 512) -> Double {
        let vectors = TestVectors.shared
        let verifier = vectors.verifier()
        let jws = (0..<distinctVectors).map { _ in vectors.signedTransaction() }
        _ = try? verifier.verifyTransaction(jws[0])  // warm the chain cache
        let before = cpuSeconds()
        for index in 0..<count {
            guard (try? verifier.verifyTransaction(jws[index % jws.count])) != nil else {
                preconditionFailure("bench vector rejected")
            }
        }
        return Double(count) / (cpuSeconds() - before)
    }

    /// User plus system CPU seconds consumed by this process so far.
    public static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
