import Synchronization

/// The parts of a running service, in the order they started, stopped one way (issue 37: one
/// composition root, the shape of swift-service-lifecycle's `ServiceGroup`): first every part
/// drains — stops taking new work and finishes what it has in hand — last started first, then
/// every part stops, last started first. A part added only once it started, so a start-up that
/// fails part-way stops exactly what had started, in the same order.
package final class ComponentGroup: Sendable {
    /// One started part: what it does on each phase (either may do nothing).
    package struct Part: Sendable {
        package var name: String
        package var drain: @Sendable () -> Void
        package var stop: @Sendable () -> Void
    }

    private let parts = Mutex<[Part]>([])
    private let stopped = Atomic<Bool>(false)

    package init() {}

    /// Records a part that has started.
    package func add(
        _ name: String, drain: @escaping @Sendable () -> Void = {}, stop: @escaping @Sendable () -> Void = {}
    ) {
        parts.withLock { $0.append(Part(name: name, drain: drain, stop: stop)) }
    }

    /// The parts, in the order they started.
    package var names: [String] { parts.withLock { $0.map(\.name) } }

    /// Drains every part, then stops every part, each phase last started first. Once: later
    /// calls return at once.
    package func stopAll() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        let started = parts.withLock { $0 }
        for part in started.reversed() { part.drain() }
        for part in started.reversed() { part.stop() }
    }
}
