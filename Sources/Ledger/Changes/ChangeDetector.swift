import JSON

/// Finds the changes of api.md §4 (pure: facts and instants in, changes out).
///
/// A change is a transition of what a user has, so it is found by comparing the user's
/// document before and after, judged at the same instant: a duplicate fact changes nothing
/// and emits nothing, and facts arriving in any order end at the same document, which the
/// changes a user saw, folded, always agree with (ChangeDetectorScenarioTests). The
/// events of the write only name what a comparison cannot tell: who a chain moved from or to,
/// a debit, an admin's grant.
///
/// What time alone changes (a period's end, a grace period's end) is found the same way, by
/// judging unchanged facts at the instants the document changes by itself (`elapsed`). A write
/// first catches up with time since its user's document was last rendered (those changes carry
/// the instant they happened), then compares before and after its facts.
public enum ChangeDetector {
    /// The facts one user's document is built from.
    public struct Facts: Sendable {
        public var account: Account
        public var chains: [String: ChainState]
        /// The document's `version`.
        public var version: Int64

        public init(account: Account, chains: [String: ChainState], version: Int64) {
            self.account = account
            self.chains = chains
            self.version = version
        }
    }

    /// Time-driven steps from `announcedAt` (when the user's document was last rendered) to
    /// `now` under unchanged `facts`: one step per instant the document changed at by itself,
    /// that instant included (`[t0, t1]` then `(t1, t2]` is `(t0, t2]`: the instant `from` was
    /// judged already). At most `limit` instants are judged one by one (a user silent for years
    /// with many lapsed grants); the last of them then covers everything up to `now`, judged at
    /// the last instant before it, so nothing is lost and `occurredAt` stays a real instant.
    /// Time only goes forward: a writer whose clock is behind `announcedAt` (another instance
    /// rendered the document) must judge at `announcedAt`, or it would announce again what
    /// that render had already passed.
    public static func elapsed(
        userId: String, facts: Facts, catalog: Catalog, from announcedAt: Int64, to now: Int64, limit: Int = 64
    ) -> [ChangeStep] {
        func next(after instant: Int64) -> Int64? {
            CustomerView.nextChange(account: facts.account, chains: facts.chains, catalog: catalog, after: instant)
                .flatMap { $0 <= now ? $0 : nil }
        }
        func snapshot(at instant: Int64) -> ChangeSnapshot {
            ChangeSnapshot(
                userId: userId, account: facts.account, chains: facts.chains, catalog: catalog, at: instant,
                version: facts.version)
        }
        var steps: [ChangeStep] = []
        var instant = announcedAt
        var previous: ChangeSnapshot?
        var judged = 0
        while var at = next(after: instant) {
            judged += 1
            if judged >= limit {
                while let later = next(after: at) { at = later }  // only instants, no documents
            }
            let before = previous ?? snapshot(at: instant)
            let after = snapshot(at: at)
            let changes = compare(before, after, events: [], userId: userId, catalog: catalog, at: at)
            if !changes.isEmpty { steps.append(ChangeStep(at: at, customer: after.customer, changes: changes)) }
            previous = after
            instant = at
        }
        return steps
    }

    /// The step a write made at `now`: `before` and `after` its facts, both judged at `now`;
    /// `events` are the write's events (any stream; only this user's count). nil: nothing changed.
    public static func written(
        userId: String, before: Facts, after: Facts, events: [LedgerEvent], catalog: Catalog, at now: Int64
    ) -> ChangeStep? {
        let old = ChangeSnapshot(
            userId: userId, account: before.account, chains: before.chains, catalog: catalog, at: now,
            version: before.version)
        let new = ChangeSnapshot(
            userId: userId, account: after.account, chains: after.chains, catalog: catalog, at: now,
            version: after.version)
        let changes = compare(old, new, events: events, userId: userId, catalog: catalog, at: now)
        return changes.isEmpty ? nil : ChangeStep(at: now, customer: new.customer, changes: changes)
    }

    /// The transitions from `before` to `after`, in a fixed order: transfers, subscriptions by
    /// chain, one-off purchases by transaction, then the user's own events in log order.
    static func compare(
        _ before: ChangeSnapshot, _ after: ChangeSnapshot, events: [LedgerEvent], userId: String, catalog: Catalog,
        at now: Int64
    ) -> [ChangeDraft] {
        var changes: [ChangeDraft] = []
        let moved = transfers(events, userId: userId, before: before, after: after, catalog: catalog, at: now)
        changes += moved.changes

        let chains = Set(before.subscriptions.keys).union(after.subscriptions.keys).subtracting(moved.chains)
        let running = runningStacks(after, catalog: catalog)
        for otid in chains.sorted() {
            guard let new = after.subscriptions[otid] else {
                // Not moved, yet gone: every transaction it has is upgraded (the new one not here yet).
                changes += vanished(before.subscriptions[otid]!, catalog: catalog, at: now)
                continue
            }
            changes += subscription(
                before.subscriptions[otid], new, replacing: before.upgradedOnly[otid], running: running,
                catalog: catalog,
                at: now)
        }
        let purchases = Set(before.oneOffs.keys).union(after.oneOffs.keys)
        for transactionId in purchases.sorted() {
            guard let new = after.oneOffs[transactionId], !moved.chains.contains(new.originalTransactionId) else {
                continue
            }
            changes += oneOff(
                before.oneOffs[transactionId], new, transactionId: transactionId, balances: after.customer.balances,
                catalog: catalog, at: now)
        }
        changes += accountEvents(events, userId: userId, after: after, at: now)
        changes += lapsedGrants(before, after, events: events, userId: userId, at: now)
        return changes
    }
}

extension SubscriptionStatus {
    /// A grace period or a billing retry: Apple could not charge.
    var isBillingIssue: Bool { self == .inGracePeriod || self == .inBillingRetry }
}
