import HTTP

extension ServiceMetrics {
    /// `iap_background_lease_held{job}`: 1 for each background job this instance runs now, 0 for
    /// each it waits for (another instance holds its lease). The jobs are the leases asked for
    /// in this process: change-clock, analytics-projector, webhooks:<endpoint>, reconciler,
    /// consumption-responder, and replay once one ran here.
    package func registerLeases(_ leases: LeaseHolder) {
        registry.gauge(
            "iap_background_lease_held",
            help: "1 while this instance holds the job's lease and runs it, 0 while another instance does.",
            labels: ["job"]
        ) { leases.held.map { ([$0.name], $0.held ? 1 : 0) } }
    }
}
