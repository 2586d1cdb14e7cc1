/// The ledger's streams folded in memory: every chain's state and every user's account, routed
/// by each event's stream, with what a user's document `version` is computed from. The write
/// path folds one user's streams into it, the replay the whole log, the tests their world.
///
/// Folding is in place (`Chain.evolve(&state, event)` through the dictionaries' modify
/// accessors): one lookup per event and no copy of a state, which the replay's rate rests on.
public struct LedgerWorld: Sendable {
    public var chains: [String: ChainState] = [:]
    public var accounts: [String: Account] = [:]
    /// Per chain (by originalTransactionId) and per user: how far its stream was folded.
    public var chainPositions: [String: StreamPosition] = [:]
    public var accountPositions: [String: StreamPosition] = [:]

    public init() {}

    /// How far one stream was folded.
    public struct StreamPosition: Sendable, Hashable {
        /// Events folded: the stream's version when it was folded from its start (the event
        /// store numbers a stream's events 1, 2, 3… without gaps).
        public var version: Int64 = 0
        /// The highest global sequence number folded.
        public var lastSeq: Int64 = 0

        public init(version: Int64 = 0, lastSeq: Int64 = 0) {
            self.version = version
            self.lastSeq = lastSeq
        }

        @inline(__always) mutating func advance(to seq: Int64) {
            version += 1
            if seq > lastSeq { lastSeq = seq }
        }
    }

    /// Folds one event (global sequence number `seq`) into the chain or the account its stream
    /// names; an event of no chain and no user changes nothing. Returns where it went.
    @discardableResult
    public mutating func apply(_ event: LedgerEvent, seq: Int64) -> LedgerRoute {
        let route = event.route
        switch route {
        case .chain(let otid):
            Chain.evolve(&chains[otid, default: .initial], event)
            chainPositions[otid, default: StreamPosition()].advance(to: seq)
        case .user(let userId):
            Account.evolve(&accounts[userId, default: .initial], event)
            accountPositions[userId, default: StreamPosition()].advance(to: seq)
        case .unrouted:
            break
        }
        return route
    }

    /// Makes room for `chains` chains and `users` accounts at once: a fold of a whole log would
    /// otherwise rehash every key of its four dictionaries at each doubling (~6 % of a replay).
    public mutating func reserve(chains: Int, users: Int) {
        if chains > self.chains.capacity {
            self.chains.reserveCapacity(chains)
            chainPositions.reserveCapacity(chains)
        }
        if users > accounts.capacity {
            accounts.reserveCapacity(users)
            accountPositions.reserveCapacity(users)
        }
    }

    /// A user's account (`.initial` when their stream is empty).
    public func account(of userId: String) -> Account { accounts[userId] ?? .initial }

    /// The `version` of a user's document: the highest sequence number among their own stream
    /// and the chains they own now, so any event that can change the document raises it.
    public func version(of userId: String) -> Int64 { version(of: userId, account: account(of: userId)) }

    /// `version(of:)` when the caller holds the user's account already (one lookup less).
    public func version(of userId: String, account: Account) -> Int64 {
        var version = accountPositions[userId]?.lastSeq ?? 0
        for otid in account.chains { version = max(version, chainPositions[otid]?.lastSeq ?? 0) }
        return version
    }
}
