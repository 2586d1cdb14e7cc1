/// A Prometheus histogram family with fixed bucket bounds.
public final class Histogram: MetricFamily {
    /// 0.5 ms … 5 s: request latencies of a service that mostly answers in a few milliseconds.
    public static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
    ]

    struct Series {
        var counts: [UInt64]  // per bucket, not cumulative; last slot is +Inf
        var sum: Double = 0
        var count: UInt64 = 0
    }

    let name: String
    let help: String
    let labelNames: [String]
    let bounds: [Double]
    var type: String { "histogram" }
    /// Striped: every request records its latency in one (StripedSeries says why).
    private let series = StripedSeries<Series>()

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        precondition(!labelNames.contains("le"), "\"le\" is reserved in histograms")
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.bounds = buckets.filter { $0.isFinite }.sorted()
    }

    /// Records one observation (e.g. seconds) in the series named by `labels`.
    public func observe(_ value: Double, _ labels: [String] = []) {
        precondition(labels.count == labelNames.count, "\(name) takes labels \(labelNames)")
        var slot = bounds.count
        for (i, bound) in bounds.enumerated() where value <= bound {
            slot = i
            break
        }
        let empty = bounds.count + 1
        series.withLocalStripe { all in
            all[labels, default: Series(counts: Array(repeating: 0, count: empty))].record(slot: slot, value: value)
        }
    }

    /// Observation count of one series.
    public func count(_ labels: [String] = []) -> UInt64 {
        series.merged { $0.add($1) }[labels]?.count ?? 0
    }

    func renderSamples(into out: inout [UInt8]) {
        let snapshot = series.merged { $0.add($1) }
        let bucketLabels = labelNames + ["le"]
        for labels in snapshot.keys.sorted(by: PrometheusText.labelOrder) {
            let s = snapshot[labels]!
            var cumulative: UInt64 = 0
            for (i, bound) in bounds.enumerated() {
                cumulative += s.counts[i]
                PrometheusText.sample(
                    into: &out, name: name + "_bucket", labelNames: bucketLabels,
                    labels: labels + [PrometheusText.format(bound)], value: Double(cumulative))
            }
            PrometheusText.sample(
                into: &out, name: name + "_bucket", labelNames: bucketLabels,
                labels: labels + ["+Inf"], value: Double(s.count))
            PrometheusText.sample(into: &out, name: name + "_sum", labelNames: labelNames, labels: labels, value: s.sum)
            PrometheusText.sample(
                into: &out, name: name + "_count", labelNames: labelNames, labels: labels,
                value: Double(s.count))
        }
    }
}

extension Histogram.Series {
    mutating func record(slot: Int, value: Double) {
        counts[slot] += 1
        sum += value
        count += 1
    }

    /// Another stripe's part of the same series.
    mutating func add(_ other: Histogram.Series) {
        for i in counts.indices { counts[i] += other.counts[i] }
        sum += other.sum
        count += other.count
    }
}
