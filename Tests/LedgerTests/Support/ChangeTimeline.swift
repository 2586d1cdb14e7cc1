import JSON
import TestSupport
import Testing

@testable import Ledger

/// One write as the Service makes it: Apple's facts (decided first, as IngestPlanner does),
/// then the user decisions of the same request (claims, debits, admin grants).
struct Delivery {
    /// Apple pushes (any order, any number of times); a user's request keeps its place among
    /// the user's requests, because each was decided against what came before it.
    enum Source { case apple, user }

    var at: Int64
    var source: Source
    var facts: [ChainCommand] = []
    /// Claims an Apple fact makes by itself (an appAccountToken naming a user): only while
    /// the chain has no owner, like `IngestPlanner.claims`.
    var tokenClaims: [(otid: String, user: String)] = []
    var commands: [AccountCommand] = []
    /// User events decided elsewhere (a generated history's), applied as they are.
    var decided: [LedgerEvent]?
    var label: String

    static func apple(_ label: String, at: Int64, _ facts: [ChainCommand], tokenClaims: [(String, String)] = [])
        -> Delivery
    {
        Delivery(
            at: at, source: .apple, facts: facts, tokenClaims: tokenClaims.map { (otid: $0.0, user: $0.1) },
            label: label)
    }

    /// A notification with what it carries, all pushed (every version counts).
    static func notify(
        _ type: String, _ subtype: String? = nil, at: Int64, otid: String = "1000", transaction: Transaction? = nil,
        renewal: RenewalInfo? = nil, tokenClaims: [(String, String)] = []
    ) -> Delivery {
        var facts: [ChainCommand] = [.recordNotification(F.note(type, subtype, signed: at, otid: otid))]
        if let transaction { facts.append(.recordTransaction(transaction)) }
        if let renewal { facts.append(.recordRenewalInfo(renewal)) }
        return apple("\(type) \(subtype ?? "")", at: at, facts, tokenClaims: tokenClaims)
    }

    /// `POST /v1/purchases`: the user claims what it posts, a copy of each transaction.
    static func post(_ user: String, _ transactions: [Transaction], at: Int64, policy: TransferPolicy = .transfer)
        -> Delivery
    {
        let chains = Array(Set(transactions.map(\.originalTransactionId))).sorted()
        return Delivery(
            at: at, source: .user, facts: transactions.map(ChainCommand.recordTransactionCopy),
            commands: chains.map { .claim(userId: user, originalTransactionId: $0, policy: policy, at: at) },
            label: "post \(user) \(transactions.map(\.transactionId))")
    }

    static func command(_ label: String, at: Int64, _ command: AccountCommand) -> Delivery {
        Delivery(at: at, source: .user, commands: [command], label: label)
    }
}

/// A story: deliveries in the order they happened, the users it concerns, and when it ends
/// (the scheduler's last tick: what time alone changes up to then is emitted too).
struct Scenario: CustomTestStringConvertible, Sendable {
    var name: String
    var users: [String] = ["u-1"]
    var catalog: Catalog = Scenario.catalog
    var deliveries: [Delivery]
    var end: Int64
    /// The change types each user must see, in order.
    var expected: [String: [ChangeType]]
    /// Balance changes without a balance in any change (a transferred consumable): skip that check.
    var checksBalances = true

    var testDescription: String { name }

    static let pass = "com.example.game.pass30"
    static let bundle = "com.example.game.bundle"
    static let catalog: Catalog = {
        var catalog = F.catalog
        catalog.products[pass] = Product(type: .nonRenewing, entitlements: ["vip"], duration: ISODuration("P30D"))
        catalog.products[bundle] = Product(type: .consumable, grants: ["coins": 50, "gems": 10])
        return catalog
    }()
}

extension Delivery: @unchecked Sendable {}

/// Drives the Ledger and the change detector the way the Service does: per write, for every
/// user, catch up with time since the document was last rendered (`elapsed`, under the facts
/// before the write), then compare before and after the write (`written`).
struct ChangeRun {
    var ledger = LedgerWorld()
    var catalog: Catalog
    var users: [String]
    var seq: Int64 = 0
    var unattached: Set<String> = []
    /// When each user's document was last rendered.
    var announced: [String: Int64] = [:]
    /// Every step per user, and which ones time alone made.
    var steps: [String: [(step: ChangeStep, elapsed: Bool)]] = [:]
    /// The user events each user delivery decided, in delivery order (replayed as decided
    /// when the deliveries are rearranged: a debit was answered once, against its balance then).
    var decided: [[LedgerEvent]] = []
    /// After every write and tick, per user: how many steps there were and the document then
    /// (what the changes so far must add up to).
    var checkpoints: [String: [(steps: Int, customer: Customer)]] = [:]
    /// Deliveries that decided nothing (duplicates) but still produced a `written` step.
    var noisyDuplicates: [String] = []

    init(catalog: Catalog, users: [String]) {
        self.catalog = catalog
        self.users = users
    }

    func facts(_ user: String) -> ChangeDetector.Facts {
        ChangeDetector.Facts(
            account: ledger.account(of: user), chains: ledger.chains, version: ledger.version(of: user))
    }

    func customer(_ user: String, at now: Int64) -> Customer {
        var doc = CustomerView.build(
            userId: user, account: ledger.account(of: user), chains: ledger.chains, catalog: catalog, at: now,
            version: 0)
        doc.version = 0
        return doc
    }

    private mutating func apply(_ events: [LedgerEvent]) {
        for event in events {
            seq += 1
            ledger.apply(event, seq: seq)
        }
    }

    private func owner(of otid: String) -> String? {
        ledger.accounts.first { $0.value.chains.contains(otid) }?.key
    }

    /// One write at `delivery.at`. `userEvents`: the user decisions as first decided (nil:
    /// decide them now). Returns the events the write appended; a refused claim rolls back.
    @discardableResult
    mutating func deliver(_ delivery: Delivery, userEvents: [LedgerEvent]? = nil) -> [LedgerEvent] {
        let now = delivery.at
        if let last = announced.values.max(), last > now { Issue.record("\(delivery.label) goes back in time") }
        let saved = (ledger, seq, unattached)
        let before = Dictionary(uniqueKeysWithValues: users.map { ($0, facts($0)) })
        var events: [LedgerEvent] = []
        for fact in delivery.facts {
            let decided: [LedgerEvent]
            if case .recordNotification(let n) = fact, n.originalTransactionId == nil {
                decided = unattached.insert(n.notificationUUID).inserted ? [.notificationReceived(n)] : []
            } else {
                decided = Chain.decide(fact, ledger.chains[fact.originalTransactionId] ?? .initial)
            }
            apply(decided)
            events += decided
        }
        for claim in delivery.tokenClaims where owner(of: claim.otid) == nil {
            let claimed: [LedgerEvent] = [
                .chainClaimed(userId: claim.user, originalTransactionId: claim.otid, from: nil, at: now)
            ]
            apply(claimed)
            events += claimed
        }
        var mine: [LedgerEvent] = []
        if let userEvents = userEvents ?? delivery.decided {
            mine = userEvents
            apply(mine)
        } else {
            for command in delivery.commands {
                do throws(Rejection) {
                    let decided = try Account.decide(
                        command, ledger.account(of: command.userId), context: context(command))
                    apply(decided)
                    mine += decided
                } catch {
                    (ledger, seq, unattached) = saved  // the write rolls back: nothing happened
                    if delivery.source == .user && userEvents == nil { decided.append([]) }
                    return []
                }
            }
        }
        if delivery.source == .user { decided.append(mine) }
        events += mine
        for user in users {
            let from = announced[user] ?? now
            for step in ChangeDetector.elapsed(
                userId: user, facts: before[user]!, catalog: catalog, from: from, to: now)
            {
                steps[user, default: []].append((step, true))
            }
            if let step = ChangeDetector.written(
                userId: user, before: before[user]!, after: facts(user), events: events, catalog: catalog, at: now)
            {
                steps[user, default: []].append((step, false))
                if events.isEmpty { noisyDuplicates.append(delivery.label) }
            }
            announced[user] = now
            checkpoints[user, default: []].append((steps[user]?.count ?? 0, customer(user, at: now)))
        }
        return events
    }

    /// The scheduler's tick at `now`: what time alone changed since each document was rendered.
    mutating func tick(_ now: Int64) {
        for user in users {
            for step in ChangeDetector.elapsed(
                userId: user, facts: facts(user), catalog: catalog, from: announced[user] ?? now, to: now)
            {
                steps[user, default: []].append((step, true))
            }
            announced[user] = now
            checkpoints[user, default: []].append((steps[user]?.count ?? 0, customer(user, at: now)))
        }
    }

    private func context(_ command: AccountCommand) -> AccountContext {
        switch command {
        case .claim(_, let otid, _, _): AccountContext(chainOwner: owner(of: otid))
        case .debit(let user, let currency, _, _, _, _):
            AccountContext(
                balance: CustomerView.balance(
                    of: currency, account: ledger.account(of: user), chains: ledger.chains, catalog: catalog))
        default: AccountContext()
        }
    }

    func changes(_ user: String) -> [ChangeDraft] { (steps[user] ?? []).flatMap(\.step.changes) }
    func types(_ user: String) -> [ChangeType] { changes(user).map(\.type) }

    // MARK: Runs

    static func inOrder(_ scenario: Scenario) -> ChangeRun {
        var run = ChangeRun(catalog: scenario.catalog, users: scenario.users)
        for delivery in scenario.deliveries { run.deliver(delivery) }
        run.tick(scenario.end)
        return run
    }

    /// Apple's deliveries shuffled, each delivered twice; the users' requests in their order,
    /// each retried at once (a client that did not see the answer). Nothing arrives before it
    /// happened: a delivery moved ahead of a later one arrives as late as that one.
    /// `repeats`: the labels of the deliveries that were repeats (must decide nothing).
    static func arranged(_ scenario: Scenario, seed: UInt64, original: ChangeRun) -> (
        run: ChangeRun, repeats: [(label: String, events: [LedgerEvent], written: Int)]
    ) {
        var rng = SplitMix64(seed: seed)
        let apple = scenario.deliveries.filter { $0.source == .apple }
        let shuffled = (apple.indices.map { $0 } + apple.indices.map { $0 }).shuffled(using: &rng)
        // The first copy of each shuffled pair is the original, the later one the repeat.
        var seen: Set<Int> = []
        var order: [(delivery: Delivery, isRepeat: Bool, user: Int?)] = shuffled.map {
            (apple[$0], !seen.insert($0).inserted, nil)
        }
        var floor = 0
        for (index, delivery) in scenario.deliveries.filter({ $0.source == .user }).enumerated() {
            let at = Int.random(in: floor...order.count, using: &rng)
            var pinned = delivery
            pinned.label += " #\(index)"
            order.insert((pinned, false, index), at: at)
            // The retry asks again only what was granted the first time: a request refused
            // then (a debit over the balance) may pass now, and that would be a new request.
            if original.decided[index].isEmpty { pinned.commands = [] }
            pinned.decided = nil
            order.insert((pinned, true, index), at: at + 1)
            floor = at + 2
        }
        var run = ChangeRun(catalog: scenario.catalog, users: scenario.users)
        var clock = Int64.min
        var repeats: [(label: String, events: [LedgerEvent], written: Int)] = []
        func written() -> Int { run.steps.values.reduce(0) { $0 + $1.filter { !$0.elapsed }.count } }
        for (delivery, isRepeat, user) in order {
            var delivery = delivery
            clock = max(clock, delivery.at)
            delivery.at = clock
            let before = written()
            let events: [LedgerEvent]
            if let user, !isRepeat {
                events = run.deliver(delivery, userEvents: original.decided[user])
            } else {
                events = run.deliver(delivery)
            }
            if isRepeat { repeats.append((delivery.label, events, written() - before)) }
        }
        run.tick(max(clock, scenario.end))
        return (run, repeats)
    }
}

extension ChainCommand {
    var originalTransactionId: String {
        switch self {
        case .recordTransaction(let t), .recordTransactionCopy(let t): t.originalTransactionId
        case .recordRenewalInfo(let r), .recordRenewalInfoCopy(let r): r.originalTransactionId
        case .recordNotification(let n): n.originalTransactionId ?? ""
        }
    }
}

extension AccountCommand {
    var userId: String {
        switch self {
        case .claim(let user, _, _, _), .debit(let user, _, _, _, _, _), .credit(let user, _, _, _, _, _),
            .grant(let user, _, _, _, _), .revoke(let user, _, _, _), .promote(let user, _, _, _, _, _, _),
            .revokePromotion(let user, _, _), .mintAppAccountToken(let user, _, _),
            .registerAppAccountToken(let user, _, _, _), .noteAppleAccount(let user, _, _, _),
            .rescindConsent(let user, _, _), .mergeAlias(let user, _, _, _):
            user
        }
    }
}
