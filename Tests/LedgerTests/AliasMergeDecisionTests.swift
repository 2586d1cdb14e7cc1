import Testing

@testable import Ledger

/// api.md §7's alias merge as the pure account decides and folds it: what moves, what a repeat
/// and the conflicts decide, and that the recorded event reads back to the same account.
@Suite struct AliasMergeDecisionTests {
    /// The anonymous id's account: a chain, two debits, a credit, a grant, a promotion, a token.
    static let anonymous = Account.fold([
        .chainClaimed(userId: "anon", originalTransactionId: "c-anon", from: nil, at: F.t0),
        .balanceCredited(userId: "anon", currency: "coins", amount: 50, idempotencyKey: "gift", reason: "x", at: F.t0),
        .balanceDebited(
            userId: "anon", currency: "coins", amount: 30, idempotencyKey: "k-anon", reason: "s", balanceAfter: 20,
            at: F.t0 + 1),
        .balanceDebited(
            userId: "anon", currency: "coins", amount: 10, idempotencyKey: "k-both", reason: "s", balanceAfter: 10,
            at: F.t0 + 2),
        .entitlementGranted(userId: "anon", entitlement: "vip", reason: "r", expiresAt: nil, at: F.t0),
        .promotionalGranted(
            PromotionalGrant(
                userId: "anon", grantId: "g-1", entitlement: "pro", expiresAt: F.t0 + 1000, duration: nil,
                reason: "welcome", idempotencyKey: nil, at: F.t0)),
        .appAccountTokenRegistered(userId: "anon", appAccountToken: "tok-anon", minted: true, at: F.t0),
    ])

    static let user = Account.fold([
        .chainClaimed(userId: "u", originalTransactionId: "c-u", from: nil, at: F.t0),
        .balanceDebited(
            userId: "u", currency: "coins", amount: 5, idempotencyKey: "k-both", reason: "s", balanceAfter: 95,
            at: F.t0 + 3),
    ])

    @Test func theMergeMovesEverythingAndSumsTheBalances() throws {
        let events = try Account.decide(
            .mergeAlias(userId: "u", alias: "anon", aliasAccount: Self.anonymous, at: F.t0 + 10), Self.user)
        #expect(
            events == [
                .aliasMerged(userId: "u", alias: "anon", moved: Self.anonymous, at: F.t0 + 10),
                .mergedInto(userId: "anon", target: "u", at: F.t0 + 10),
            ])
        let merged = Account.fold([events[0]], into: Self.user)
        #expect(merged.chains == ["c-anon", "c-u"])
        // Every debit counts: 30 + 10 of the alias, 5 of the user; the credit of 50 moves too.
        #expect(merged.debited == ["coins": 45])
        #expect(merged.credited == ["coins": 50])
        // A key both used answers as the user's own did; the alias's other key as it did.
        #expect(merged.debit(idempotencyKey: "k-both")?.debit.amount == 5)
        #expect(merged.debit(idempotencyKey: "k-anon")?.debit.balanceAfter == 20)
        #expect(merged.grants["vip"] != nil)
        #expect(merged.promotions["g-1"]?.grant.userId == "u")
        #expect(merged.appAccountTokens == ["tok-anon"])
        #expect(merged.mintedAppAccountToken == "tok-anon")
        #expect(merged.aliases == ["anon"])
        // The alias keeps nothing but where it points.
        let alias = Account.fold([events[1]], into: Self.anonymous)
        #expect(alias.chains.isEmpty && alias.debited.isEmpty && alias.grants.isEmpty)
        #expect(alias.aliasOf == "u")
        // The same pair again decides nothing.
        #expect(
            try Account.decide(.mergeAlias(userId: "u", alias: "anon", aliasAccount: alias, at: F.t0 + 20), merged)
                == [])
    }

    @Test func conflictsAndTheSameIdAreRefused() throws {
        let merged = Account.fold([.aliasMerged(userId: "u", alias: "anon", moved: Self.anonymous, at: F.t0)])
        let alias = Account.fold([.mergedInto(userId: "anon", target: "u", at: F.t0)])
        // The alias is another user's already.
        #expect(throws: Rejection.self) {
            try Account.decide(.mergeAlias(userId: "v", alias: "anon", aliasAccount: alias, at: F.t0), .initial)
        }
        // The alias has aliases of its own.
        #expect(throws: Rejection.self) {
            try Account.decide(.mergeAlias(userId: "v", alias: "u", aliasAccount: merged, at: F.t0), .initial)
        }
        // The target is itself an alias.
        #expect(throws: Rejection.self) {
            try Account.decide(.mergeAlias(userId: "anon", alias: "w", aliasAccount: .initial, at: F.t0), alias)
        }
        #expect(throws: Rejection.aliasOfItself) {
            try Account.decide(.mergeAlias(userId: "u", alias: "u", aliasAccount: .initial, at: F.t0), .initial)
        }
        #expect(Rejection.aliasConflict(alias: "a", reason: "r").code == "alias_conflict")
        #expect(Rejection.aliasOfItself.code == "invalid_request")
    }

    @Test func theRecordedEventsReadBackTheSame() throws {
        for event: LedgerEvent in [
            .aliasMerged(userId: "u", alias: "anon \"quoted\"", moved: Self.anonymous, at: F.t0),
            .aliasMerged(userId: "u", alias: "anon", moved: .initial, at: F.t0),
            .mergedInto(userId: "anon", target: "u", at: F.t0),
        ] {
            let data = event.encode()
            #expect(try LedgerEvent.decode(type: event.typeName, schemaVersion: 1, data: data) == event)
            var decoder = LedgerEventDecoder()
            let again = try data.withUnsafeBufferPointer { bytes in
                try decoder.decode(type: event.typeName, schemaVersion: 1, data: bytes)
            }
            #expect(again == event)
            #expect(LedgerEvent.typeNames.contains(event.typeName))
            #expect(event.route == .user(event.typeName == "AliasMerged" ? "u" : "anon"))
        }
    }
}
