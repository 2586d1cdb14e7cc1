import JSON

extension ChangeDetector {
    /// A chain moved between users (policy `transfer`): one TRANSFER for each side, from the
    /// `chainClaimed` (with `from`) on the new owner's stream and the `chainReleased` on the old
    /// one's, with the same details; the moved chains are then not compared again. An alias
    /// merge moves the alias's chains to the target: one TRANSFER each, on the target.
    static func transfers(
        _ events: [LedgerEvent], userId: String, before: ChangeSnapshot, after: ChangeSnapshot, catalog: Catalog,
        at now: Int64
    ) -> (changes: [ChangeDraft], chains: Set<String>) {
        var changes: [ChangeDraft] = []
        var chains: Set<String> = []
        var moves: [(otid: String, from: String, to: String)] = []
        for event in events {
            switch event {
            case .chainClaimed(let claimant, let chain, let previous?, _) where claimant == userId:
                moves.append((chain, previous, claimant))
            case .chainReleased(let owner, let chain, let next, _) where owner == userId:
                moves.append((chain, owner, next))
            case .aliasMerged(let target, let alias, let moved, _) where target == userId:
                // An alias merge (api.md §7): every chain of the alias moved to its target.
                moves += moved.chains.sorted().map { ($0, alias, target) }
            default:
                continue
            }
        }
        for (otid, from, to) in moves {
            chains.insert(otid)
            // What moved, as whichever side still has it describes it.
            let snapshot =
                after.subscriptions[otid] != nil || after.oneOffs.values.contains { $0.originalTransactionId == otid }
                ? after : before
            let what = describe(chain: otid, in: snapshot, catalog: catalog)
            changes.append(
                ChangeDraft(
                    type: .transfer, environment: what.environment, occurredAt: now, productId: what.productId,
                    originalTransactionId: otid, transactionId: what.transactionId,
                    entitlementIds: what.entitlements, details: ["from": .string(from), "to": .string(to)]))
        }
        return (changes, chains)
    }

    static func describe(chain otid: String, in snapshot: ChangeSnapshot, catalog: Catalog) -> (
        productId: String?, transactionId: String?, environment: String?, entitlements: [String]
    ) {
        if let view = snapshot.subscriptions[otid] {
            let product = catalog.product(for: view.productId, transactionType: view.transactionType)
            return (view.productId, view.transactionId, view.environment, product.entitlements.sorted())
        }
        if let (transactionId, oneOff) = snapshot.oneOffs.first(where: { $0.value.originalTransactionId == otid }) {
            let product = catalog.product(
                for: oneOff.productId, type: oneOff.type == .consumable ? .consumable : .nonConsumable)
            return (oneOff.productId, transactionId, oneOff.environment, product.entitlements.sorted())
        }
        return (nil, nil, nil, [])
    }
}
