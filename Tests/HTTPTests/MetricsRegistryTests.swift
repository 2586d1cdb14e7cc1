import Foundation
import HTTP
import Testing

@Suite struct MetricsRegistryTests {
    /// One parsed sample line: `name{labels} value`.
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// A strict reader of the text format: every line is a HELP/TYPE comment or a valid sample,
    /// and every sample belongs to a family announced by a TYPE line before it.
    static func parse(_ text: String) throws -> [Sample] {
        struct Bad: Error { let line: String }
        var typed: [String: String] = [:]
        var samples: [Sample] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") { continue }
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3])
                else { throw Bad(line: String(line)) }
                typed[String(parts[2])] = String(parts[3])
                continue
            }
            guard let space = line.lastIndex(of: " "),
                let value = Double(
                    line[line.index(after: space)...]
                        .replacingOccurrences(of: "+Inf", with: "inf"))
            else { throw Bad(line: String(line)) }
            let series = line[..<space]
            var name = String(series)
            var labels: [String: String] = [:]
            if let brace = series.firstIndex(of: "{") {
                guard series.hasSuffix("}") else { throw Bad(line: String(line)) }
                name = String(series[..<brace])
                let body = series[series.index(after: brace)..<series.index(before: series.endIndex)]
                for pair in body.split(separator: ",") {
                    guard let eq = pair.firstIndex(of: "="), pair[pair.index(after: eq)...].hasPrefix("\""),
                        pair.hasSuffix("\"")
                    else { throw Bad(line: String(line)) }
                    labels[String(pair[..<eq])] = String(
                        pair[pair.index(eq, offsetBy: 2)..<pair.index(before: pair.endIndex)])
                }
            }
            let family = ["_bucket", "_sum", "_count"].reduce(name) { n, suffix in
                typed[n] == nil && n.hasSuffix(suffix) ? String(n.dropLast(suffix.count)) : n
            }
            guard typed[family] != nil else { throw Bad(line: String(line)) }
            samples.append(Sample(name: name, labels: labels, value: value))
        }
        return samples
    }

    @Test func countersGaugesAndHistogramsRenderAsPrometheusText() throws {
        let registry = MetricsRegistry()
        let requests = registry.counter(
            "iap_http_requests_total", help: "HTTP requests.", labels: ["route", "method", "status"])
        let latency = registry.histogram(
            "iap_http_request_duration_seconds", help: "Latency.", labels: ["route"])
        let running = registry.gauge("iap_jobs_running", help: "Jobs.")
        registry.gauge("iap_pool_connections", help: "Pool use.", labels: ["state"]) {
            [(labels: ["in_use"], value: 3), (labels: ["idle"], value: 5)]
        }
        registry.gauge("iap_uptime_seconds", help: "Up.") { 12.5 }

        requests.increment(["/v1/users/{userId}", "GET", "200"])
        running.set(2)
        for seconds in [0.0001, 0.003, 0.003, 0.2, 7.0] { latency.observe(seconds, ["/v1/users/{userId}"]) }
        let first = try Self.parse(String(decoding: registry.render(), as: UTF8.self))
        requests.increment(["/v1/users/{userId}", "GET", "200"], by: 2)
        let second = try Self.parse(String(decoding: registry.render(), as: UTF8.self))

        func value(_ samples: [Sample], _ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
        let requestLabels = ["route": "/v1/users/{userId}", "method": "GET", "status": "200"]
        #expect(value(first, "iap_http_requests_total", requestLabels) == 1)
        #expect(value(second, "iap_http_requests_total", requestLabels) == 3)
        #expect(value(first, "iap_jobs_running") == 2)
        #expect(value(first, "iap_pool_connections", ["state": "in_use"]) == 3)
        #expect(value(first, "iap_uptime_seconds") == 12.5)

        let buckets = first.filter { $0.name == "iap_http_request_duration_seconds_bucket" }
        #expect(buckets.count == Histogram.latencyBuckets.count + 1)
        #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0.value <= $1.value })
        #expect(buckets.last?.labels["le"] == "+Inf" && buckets.last?.value == 5)
        #expect(buckets.first { $0.labels["le"] == "0.0005" }?.value == 1)
        #expect(buckets.first { $0.labels["le"] == "0.005" }?.value == 3)
        #expect(buckets.first { $0.labels["le"] == "5" }?.value == 4)
        let route = ["route": "/v1/users/{userId}"]
        #expect(value(first, "iap_http_request_duration_seconds_count", route) == 5)
        #expect(abs((value(first, "iap_http_request_duration_seconds_sum", route) ?? 0) - 7.2061) < 1e-9)
    }

    @Test func labelValuesAndHelpAreEscaped() throws {
        let registry = MetricsRegistry()
        let counter = registry.counter("odd_total", help: "a \\ b\nc", labels: ["v"])
        counter.increment(["quote\" back\\ nl\n"])
        let text = String(decoding: registry.render(), as: UTF8.self)
        #expect(text.contains(#"# HELP odd_total a \\ b\nc"#))
        #expect(text.contains(#"odd_total{v="quote\" back\\ nl\n"} 1"#))
    }

    @Test func concurrentIncrementsAreAllCounted() async {
        let registry = MetricsRegistry()
        let counter = registry.counter("hits_total", help: "Hits.", labels: ["k"])
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask { for _ in 0..<1000 { counter.increment(["k\(t % 2)"]) } }
            }
        }
        #expect(counter.value(["k0"]) + counter.value(["k1"]) == 8000)
    }

    /// Counters and histograms keep their series in per-thread stripes: from 16 threads (more than
    /// the stripes' collisions let share one), every observation is counted once, and a scrape
    /// shows each series once with the stripes summed.
    @Test func stripedSeriesFromManyThreadsRenderOnceWithEverythingCounted() throws {
        let registry = MetricsRegistry()
        let counter = registry.counter("striped_total", help: "Hits.", labels: ["k"])
        let latency = registry.histogram("striped_seconds", help: "Latency.", labels: ["k"])
        let threads = 16
        let perThread = 2000
        let done = DispatchGroup()
        for t in 0..<threads {
            done.enter()
            let thread = Thread {
                for i in 0..<perThread {
                    counter.increment(["k\(t % 2)"])
                    latency.observe(i.isMultiple(of: 2) ? 0.0001 : 0.2, ["k\(t % 2)"])
                }
                done.leave()
            }
            thread.start()
        }
        done.wait()
        #expect(counter.value(["k0"]) == Double(threads / 2 * perThread))
        #expect(counter.value(["k1"]) == Double(threads / 2 * perThread))
        #expect(latency.count(["k0"]) == UInt64(threads / 2 * perThread))
        let samples = try Self.parse(String(decoding: registry.render(), as: UTF8.self))
        let totals = samples.filter { $0.name == "striped_total" }
        #expect(totals.count == 2, "one line per series, not one per stripe")
        #expect(totals.map(\.value).reduce(0, +) == Double(threads * perThread))
        let counts = samples.filter { $0.name == "striped_seconds_count" }
        #expect(counts.count == 2 && counts.allSatisfy { $0.value == Double(threads / 2 * perThread) })
        let fast = samples.first { $0.name == "striped_seconds_bucket" && $0.labels == ["k": "k0", "le": "0.0005"] }
        #expect(fast?.value == Double(threads / 2 * perThread / 2))
        let sum = samples.first { $0.name == "striped_seconds_sum" && $0.labels == ["k": "k1"] }?.value ?? 0
        #expect(abs(sum - Double(threads / 2 * perThread / 2) * 0.2001) < 1e-6)
    }
}
