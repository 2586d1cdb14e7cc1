import EventStore
import Ledger

/// Names the changes of a write for the feed, under the catalog the write renders with.
///
/// The stored document of a user is what the feed has announced: every path that stores one
/// (ingest, a debit, the clock) first announces what time changed since it was rendered — a
/// period that ended, a grace period that began — with the instants they happened at, then
/// what the write's facts changed. So the clock and a write racing for the same expiry cannot
/// both emit it: whichever stores the document first announces it, under the user's lock.
package struct ChangeWriter: Sendable {
    package let catalog: Catalog

    package init(catalog: Catalog) {
        self.catalog = catalog
    }

    /// The changes of one user's write at `now`: `rendered` is the document stored after it.
    package func changes(
        _ input: ChangeInput, after world: LedgerRepository.UserWorld, events: [LedgerEvent], now: Int64,
        rendered: [UInt8]
    ) -> [NewChange] {
        var steps: [ChangeStep] = []
        if let announcedAt = input.announcedAt, announcedAt < now {
            steps += ChangeDetector.elapsed(
                userId: input.userId, facts: input.before, catalog: catalog, from: announcedAt, to: now)
        }
        let after = ChangeDetector.Facts(account: world.account, chains: world.chains, version: world.lastSeq)
        if let step = ChangeDetector.written(
            userId: input.userId, before: input.before, after: after, events: events, catalog: catalog, at: now)
        {
            steps.append(step)
        }
        guard !steps.isEmpty else { return [] }
        // The write's own step is judged at `now` with the facts after it: exactly the stored
        // document. A time step before it carries the document as it was at its instant.
        let last = steps.count - 1
        let storedIsLast = steps[last].at == now && steps[last].customer.version == world.lastSeq
        return NewChange.from(steps, userId: input.userId, rendered: storedIsLast ? rendered : nil)
    }
}
