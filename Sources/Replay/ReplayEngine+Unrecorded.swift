import Infrastructure
import Ledger

extension ReplayEngine {
    /// A replay judged with `catalog` as given instead of the recorded catalog in force: for a
    /// generated log whose catalog was never recorded (the bench tool's `ReplayBenchmarkLog`).
    public static func judging(with catalog: Catalog, conninfo: String) -> ReplayEngine {
        ReplayEngine(conninfo: conninfo, catalog: catalog)
    }
}
