import Foundation
import TestSupport

/// What the measured service says of itself on `/metrics`, for the notes under the table.
extension BenchmarkSuite {
    /// The value of each sample named in `series` (exactly, labels included), from one scrape;
    /// nil when the service could not be asked.
    static func samples(_ series: [String], of service: ServiceProcess, key: String) -> [String: Double]? {
        guard let port = URL(string: service.url)?.port,
            let text = try? ServiceHTTPClient(port: port, apiKey: key).get("/metrics").text
        else { return nil }
        var found: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            guard let space = line.lastIndex(of: " ") else { continue }
            let name = String(line[..<space])
            if series.contains(name), let value = Double(line[line.index(after: space)...]) { found[name] = value }
        }
        return found
    }

    /// What the service's durable commits of ingest carried (`iap_ingest_batch_size`): "N
    /// purchases in M commits (mean …, K alone)".
    static func batchSizes(of service: ServiceProcess, key: String) -> String {
        let sum = "iap_ingest_batch_size_sum"
        let count = "iap_ingest_batch_size_count"
        let alone = #"iap_ingest_batch_size_bucket{le="1"}"#
        guard let found = samples([sum, count, alone], of: service, key: key),
            let purchases = found[sum], let commits = found[count], commits > 0, let single = found[alone]
        else { return "unavailable" }
        return String(
            format: "%.0f purchases in %.0f commits (mean %.1f per commit, %.0f recorded alone)", purchases, commits,
            purchases / commits, single)
    }

    /// The service's document-cache outcomes (`iap_user_cache_reads_total`) as "N hits, …".
    static func cacheReads(of service: ServiceProcess, key: String) -> String {
        let outcomes = [("hit", "hits"), ("miss", "misses"), ("bypass", "bypasses")]
        let series = outcomes.map { #"iap_user_cache_reads_total{result=""# + $0.0 + #""}"# }
        guard let found = samples(series, of: service, key: key) else { return "outcomes unavailable" }
        return zip(series, outcomes).map { name, outcome in
            "\(found[name].map { String(format: "%.0f", $0) } ?? "?") \(outcome.1)"
        }.joined(separator: ", ")
    }
}
