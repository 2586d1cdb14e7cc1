import Infrastructure
import Synchronization

/// Whether this instance is draining: after SIGTERM (with `IAP_LEDGER_DRAIN_SECONDS` > 0)
/// `/readyz` answers 503 so a load balancer's health check takes the instance out of rotation,
/// while every request that still arrives (in flight, or sent before the balancer noticed) is
/// served as usual. Only then does `serve` stop accepting.
public final class DrainSwitch: Sendable {
    private let draining = Atomic<Bool>(false)

    public init() {}

    public var isDraining: Bool { draining.load(ordering: .relaxed) }

    public func begin() { draining.store(true, ordering: .relaxed) }
}
