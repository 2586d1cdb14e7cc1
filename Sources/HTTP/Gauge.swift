import Synchronization

/// A Prometheus gauge family set or moved by the caller.
public final class Gauge: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    var type: String { "gauge" }
    private let series = Mutex<[[String]: Double]>([:])

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
    }

    public func set(_ value: Double, _ labels: [String] = []) {
        precondition(labels.count == labelNames.count, "\(name) takes labels \(labelNames)")
        series.withLock { $0[labels] = value }
    }

    public func add(_ delta: Double, _ labels: [String] = []) {
        precondition(labels.count == labelNames.count, "\(name) takes labels \(labelNames)")
        series.withLock { $0[labels, default: 0] += delta }
    }

    public func value(_ labels: [String] = []) -> Double {
        series.withLock { $0[labels] ?? 0 }
    }

    func renderSamples(into out: inout [UInt8]) {
        PrometheusText.samples(into: &out, name: name, labelNames: labelNames, series: series.withLock { $0 })
    }
}

/// A gauge (or a counter kept elsewhere, e.g. in atomics on a hot path) sampled at scrape time.
final class CallbackGauge: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    let type: String
    private let sample: @Sendable () -> [(labels: [String], value: Double)]

    init(
        name: String, help: String, labelNames: [String], type: String = "gauge",
        sample: @escaping @Sendable () -> [(labels: [String], value: Double)]
    ) {
        self.type = type
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.sample = sample
    }

    func renderSamples(into out: inout [UInt8]) {
        for (labels, value) in sample() where labels.count == labelNames.count {
            PrometheusText.sample(into: &out, name: name, labelNames: labelNames, labels: labels, value: value)
        }
    }
}
