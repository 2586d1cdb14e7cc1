import Infrastructure
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
    /// Rebuild even a projection the database holds at a newer version than this code's (an
    /// operator rolling a failed upgrade back: `iap-ledger replay --downgrade`). Without it such
    /// a replay is refused (`projection_version_ahead`), so an instance left on old code cannot
    /// undo a newer instance's rebuild.
    public var allowDowngrade = false
    /// Events per COPY batch.
    public var batchSize = 100_000
    /// Called once the bulk of the log is folded and loaded, before the catch-up: lets a test
    /// append events at exactly the moment a real writer could, instead of racing a timer.
    public var beforeCatchUp: (@Sendable () -> Void)?
    /// Called once the swap's corrections are built, before its transaction: a write here is one
    /// the swap must judge again under its locks.
    public var beforeSwap: (@Sendable () -> Void)?

    public init(dryRun: Bool = false, projections: Set<String> = [], catalog: Catalog? = nil) {
        self.dryRun = dryRun
        self.projections = projections
        self.catalog = catalog
    }
}
