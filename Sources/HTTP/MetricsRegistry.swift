import Synchronization

/// A set of Prometheus metric families rendered in text exposition format 0.0.4.
/// Registration is rare (start-up); updates are one short mutex section per call.
public final class MetricsRegistry: Sendable {
    private let families = Mutex<[any MetricFamily]>([])

    public init() {}

    /// A monotonically increasing counter (name should end in `_total`).
    public func counter(_ name: String, help: String, labels: [String] = []) -> Counter {
        register(Counter(name: name, help: help, labelNames: labels))
    }

    /// A counter whose samples are read at scrape time from where the caller keeps them (for
    /// hot paths that count in atomics rather than take the registry's mutex per event).
    public func counter(
        _ name: String, help: String, labels: [String] = [],
        sample: @escaping @Sendable () -> [(labels: [String], value: Double)]
    ) {
        _ = register(CallbackGauge(name: name, help: help, labelNames: labels, type: "counter", sample: sample))
    }

    /// A gauge set or moved by the caller.
    public func gauge(_ name: String, help: String, labels: [String] = []) -> Gauge {
        register(Gauge(name: name, help: help, labelNames: labels))
    }

    /// A gauge whose samples are taken at scrape time (e.g. connections of a pool in use).
    public func gauge(
        _ name: String, help: String, labels: [String] = [],
        sample: @escaping @Sendable () -> [(labels: [String], value: Double)]
    ) {
        _ = register(CallbackGauge(name: name, help: help, labelNames: labels, sample: sample))
    }

    /// An unlabelled gauge whose value is taken at scrape time.
    public func gauge(_ name: String, help: String, value: @escaping @Sendable () -> Double) {
        gauge(name, help: help, labels: []) { [(labels: [], value: value())] }
    }

    /// A histogram with fixed upper bounds (`le`); `+Inf` is implicit.
    public func histogram(
        _ name: String, help: String, labels: [String] = [], buckets: [Double] = Histogram.latencyBuckets
    ) -> Histogram {
        register(Histogram(name: name, help: help, labelNames: labels, buckets: buckets))
    }

    /// The whole registry as `text/plain; version=0.0.4`.
    public func render() -> [UInt8] {
        let snapshot = families.withLock { $0 }
        var out: [UInt8] = []
        out.reserveCapacity(4096)
        for family in snapshot {
            PrometheusText.header(into: &out, name: family.name, help: family.help, type: family.type)
            family.renderSamples(into: &out)
        }
        return out
    }

    /// The content type to serve `render()` with.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private func register<M: MetricFamily>(_ metric: M) -> M {
        precondition(PrometheusText.isValidName(metric.name), "invalid metric name \(metric.name)")
        precondition(metric.labelNames.allSatisfy(PrometheusText.isValidName), "invalid label in \(metric.name)")
        return families.withLock { families in
            precondition(!families.contains { $0.name == metric.name }, "metric \(metric.name) registered twice")
            families.append(metric)
            return metric
        }
    }
}

/// What the registry needs from every kind of metric.
protocol MetricFamily: Sendable {
    var name: String { get }
    var help: String { get }
    var type: String { get }
    var labelNames: [String] { get }
    func renderSamples(into out: inout [UInt8])
}

extension MetricsRegistry {
    /// A `GET /metrics` answer: the rendered registry with the exposition content type.
    public func response() -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": Self.contentType], body: render())
    }
}
