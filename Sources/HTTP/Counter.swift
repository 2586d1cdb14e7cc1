/// A Prometheus counter family; one series per distinct label-value tuple.
public final class Counter: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    var type: String { "counter" }
    /// Striped: every request increments one (StripedSeries says why).
    private let series = StripedSeries<Double>()

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
    }

    /// Adds `amount` (≥ 0) to the series named by `labels` (values in registration order).
    public func increment(_ labels: [String] = [], by amount: Double = 1) {
        precondition(labels.count == labelNames.count, "\(name) takes labels \(labelNames)")
        precondition(amount >= 0, "a counter only goes up")
        series.withLocalStripe { $0[labels, default: 0] += amount }
    }

    /// The current value of one series (0 when never incremented).
    public func value(_ labels: [String] = []) -> Double {
        series.merged(+=)[labels] ?? 0
    }

    func renderSamples(into out: inout [UInt8]) {
        PrometheusText.samples(into: &out, name: name, labelNames: labelNames, series: series.merged(+=))
    }
}
