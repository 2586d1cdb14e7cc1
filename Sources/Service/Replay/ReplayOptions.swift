import Ledger

/// What to replay and how.
public struct ReplayOptions: Sendable {
    /// Report what would change; build and swap nothing.
    public var dryRun = false
    /// Projection names to rebuild (`users`, `analytics`); empty = all.
    public var projections: Set<String> = []
    /// A different catalog than the service's (a changed projection rule, e.g. in tests).
    public var catalog: Catalog?
    /// The instant every document is judged at; nil = the clock's now.
    public var now: Int64?
    /// Events per COPY batch.
    public var batchSize = 100_000
    /// Called once the bulk of the log is folded and loaded, before the catch-up: lets a test
    /// append events at exactly the moment a real writer could, instead of racing a timer.
    public var beforeCatchUp: (@Sendable () -> Void)?

    public init(dryRun: Bool = false, projections: Set<String> = [], catalog: Catalog? = nil) {
        self.dryRun = dryRun
        self.projections = projections
        self.catalog = catalog
    }
}
