import Foundation

/// Figures read from the text the external tools print.
enum ToolOutput {
    struct Wrk {
        var requestsPerSecond: Double
        var p99Milliseconds: Double?
        var requests: Int
        /// Non-2xx/3xx responses plus socket errors.
        var errors: Int
    }

    /// `wrk --latency` output: `Requests/sec:`, the `99%` line of the latency distribution,
    /// `N requests in`, `Non-2xx or 3xx responses:` and `Socket errors:`.
    static func wrk(_ text: String) throws -> Wrk {
        var rps: Double?
        var p99: Double?
        var requests = 0
        var errors = 0
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("Requests/sec:"), words.count >= 2 { rps = Double(words[1]) }
            if line.hasPrefix("99%"), words.count >= 2 { p99 = milliseconds(String(words[1])) }
            if words.count >= 3, words[1] == "requests", words[2] == "in" { requests = Int(words[0]) ?? 0 }
            if line.hasPrefix("Non-2xx or 3xx responses:"), let n = words.last.flatMap({ Int($0) }) { errors += n }
            if line.hasPrefix("Socket errors:") {
                // Socket errors: connect 0, read 0, write 0, timeout 12
                for part in line.dropFirst("Socket errors:".count).split(separator: ",") {
                    if let n = part.split(separator: " ").last.flatMap({ Int($0) }) { errors += n }
                }
            }
        }
        guard let rps else { throw Shell.Failure(description: "no Requests/sec in wrk output: \(text.suffix(600))") }
        return Wrk(requestsPerSecond: rps, p99Milliseconds: p99, requests: requests, errors: errors)
    }

    /// wrk latency lexemes: `812.00us`, `3.21ms`, `1.02s`, `2.00m`.
    static func milliseconds(_ lexeme: String) -> Double? {
        let units: [(String, Double)] = [("us", 0.001), ("ms", 1), ("s", 1000), ("m", 60_000)]
        for (suffix, factor) in units where lexeme.hasSuffix(suffix) {
            return Double(lexeme.dropLast(suffix.count)).map { $0 * factor }
        }
        return Double(lexeme)
    }

    struct PgBench {
        var tps: Double
        var averageLatencyMilliseconds: Double?
        var failed: Int
    }

    /// pgbench: `tps = 12345.678901 (without initial connection time)`, `latency average = 1.234 ms`.
    static func pgbench(_ text: String) throws -> PgBench {
        var tps: Double?
        var latency: Double?
        var failed = 0
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let words = line.split(separator: " ")
            if line.hasPrefix("tps = "), words.count >= 3 { tps = Double(words[2]) }
            if line.hasPrefix("latency average = "), words.count >= 4 { latency = Double(words[3]) }
            if line.hasPrefix("number of failed transactions:"), words.count >= 5 { failed = Int(words[4]) ?? 0 }
        }
        guard let tps else { throw Shell.Failure(description: "no tps in pgbench output: \(text.suffix(600))") }
        return PgBench(tps: tps, averageLatencyMilliseconds: latency, failed: failed)
    }

    /// `openssl speed ecdsap256`: the row `256 bits ecdsa (nistp256)   0.0000s   0.0001s  31234.5  11769.2`
    /// ends with sign/s and verify/s.
    static func opensslVerifyPerSecond(_ text: String) throws -> Double {
        for raw in text.split(separator: "\n") where raw.contains("ecdsa (nistp256)") {
            let words = raw.split(separator: " ", omittingEmptySubsequences: true)
            if words.count >= 2, let verify = Double(words[words.count - 1]), Double(words[words.count - 2]) != nil {
                return verify
            }
        }
        throw Shell.Failure(description: "no nistp256 row in openssl speed output: \(text.suffix(600))")
    }

    /// `VmHWM:` (peak resident set) of a live process, in MiB.
    static func peakRSSMegabytes(pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            if words.count >= 2, let kb = Double(words[1]) { return kb / 1024 }
        }
        return nil
    }

    /// Resets the peak RSS counter (`echo 5 > /proc/PID/clear_refs`), so VmHWM measures one load.
    static func resetPeakRSS(pid: Int32) {
        try? "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
    }
}

extension Array where Element == Double {
    var median: Double? {
        guard !isEmpty else { return nil }
        let sorted = self.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
