import Testing

@testable import Ledger

@Suite struct AccountTests {
    func claim(_ state: Account = .initial, owner: String?, policy: TransferPolicy = .transfer) throws(Rejection)
        -> [LedgerEvent]
    {
        try Account.decide(
            .claim(userId: "u-1", originalTransactionId: "1000", policy: policy, at: F.t0), state,
            context: AccountContext(chainOwner: owner))
    }

    @Test func theFirstClaimBindsTheChain() throws {
        #expect(
            try claim(owner: nil) == [.chainClaimed(userId: "u-1", originalTransactionId: "1000", from: nil, at: F.t0)])
    }

    @Test func claimingAnOwnedChainAgainDecidesNothing() throws {
        let owned = Account.fold(try claim(owner: nil))
        #expect(try claim(owned, owner: "u-1") == [])
    }

    @Test func underTransferALaterClaimMovesTheChainAndTellsTheOldOwner() throws {
        #expect(
            try claim(owner: "u-2") == [
                .chainClaimed(userId: "u-1", originalTransactionId: "1000", from: "u-2", at: F.t0),
                .chainReleased(userId: "u-2", originalTransactionId: "1000", to: "u-1", at: F.t0),
            ])
    }

    @Test func underKeepALaterClaimIsRefused() {
        #expect(throws: Rejection.ownedByOtherUser(owner: "u-2")) { try claim(owner: "u-2", policy: .keep) }
        #expect(Rejection.ownedByOtherUser(owner: "u-2").code == "owned_by_other_user")
    }

    @Test func theOldOwnerLosesWhatTheChainGranted() throws {
        var world = World()
        try world.claim("1000", for: "u-2")
        world.record(F.period("1000", start: F.t0))
        #expect(world.pro("u-2", at: F.t0 + 1))
        try world.claim("1000", for: "u-1", policy: .transfer)
        #expect(world.pro("u-1", at: F.t0 + 1))
        #expect(!world.pro("u-2", at: F.t0 + 1))
        #expect(world.customer("u-2", at: F.t0 + 1).subscriptions.isEmpty)
    }

    @Test func factsOfAnUnclaimedChainCountOnceItIsClaimed() throws {
        var world = World()
        world.record(F.period("1000", start: F.t0))
        #expect(!world.pro(at: F.t0 + 1))
        try world.claim("1000", for: "u-1")
        #expect(world.pro(at: F.t0 + 1))
    }

    @Test func aDebitTakesFromTheBalanceAndAnswersWithWhatIsLeft() throws {
        let events = try Account.decide(
            .debit(
                userId: "u-1", currency: "coins", amount: 30, idempotencyKey: "order-881", reason: "sword", at: F.t0),
            .initial, context: AccountContext(balance: 100))
        #expect(
            events == [
                .balanceDebited(
                    userId: "u-1", currency: "coins", amount: 30, idempotencyKey: "order-881",
                    reason: "sword", balanceAfter: 70, at: F.t0)
            ])
    }

    @Test func theSameDebitKeyAgainDecidesNothingAndKeepsTheFirstAnswer() throws {
        var world = World()
        try world.claim("5000", for: "u-1")
        world.record(F.consumable("5000"))
        try world.debit("u-1", "coins", 30, key: "k")
        #expect(try world.debit("u-1", "coins", 30, key: "k") == [])
        #expect(world.accounts["u-1"]?.debit(currency: "coins", idempotencyKey: "k")?.balanceAfter == 70)
        #expect(world.balance("u-1", "coins") == 70)
    }

    @Test func aDebitNeverTakesTheBalanceBelowZero() throws {
        var world = World()
        try world.claim("5000", for: "u-1")
        world.record(F.consumable("5000"))
        #expect(throws: Rejection.insufficientBalance(balance: 100)) { try world.debit("u-1", "coins", 101, key: "k") }
        #expect(try world.debit("u-1", "coins", 100, key: "k").count == 1)
        #expect(world.balance("u-1", "coins") == 0)
    }

    @Test func aDebitAmountMustBePositive() {
        #expect(throws: Rejection.invalidAmount(0)) {
            try Account.decide(
                .debit(userId: "u-1", currency: "coins", amount: 0, idempotencyKey: "k", reason: "", at: 0),
                .initial, context: AccountContext(balance: 10))
        }
    }

    @Test func anAdminGrantIsActiveUntilItExpiresAndRevokeEndsIt() throws {
        var world = World()
        try world.command(
            "u-1", .grant(userId: "u-1", entitlement: "pro", reason: "support", expiresAt: F.t0 + F.day, at: F.t0))
        #expect(
            try world.command(
                "u-1", .grant(userId: "u-1", entitlement: "pro", reason: "support", expiresAt: F.t0 + F.day, at: F.t0))
                == [])
        #expect(world.customer(at: F.t0 + F.day - 1).entitlements["pro"]?.source == .admin)
        #expect(world.pro(at: F.t0 + F.day - 1))
        #expect(!world.pro(at: F.t0 + F.day))
        #expect(CustomerView.nextChange(account: world.accounts["u-1"]!, chains: [:], after: F.t0) == F.t0 + F.day)
        try world.command("u-1", .revoke(userId: "u-1", entitlement: "pro", reason: "abuse", at: F.t0 + 1))
        #expect(world.customer(at: F.t0 + 2).entitlements["pro"] == nil)
        #expect(
            try world.command("u-1", .revoke(userId: "u-1", entitlement: "pro", reason: "abuse", at: F.t0 + 1)) == [])
    }

    @Test func anAdminCreditAddsToTheBalanceOncePerKey() throws {
        var world = World()
        let credit = AccountCommand.credit(
            userId: "u-1", currency: "coins", amount: 50, idempotencyKey: "gift", reason: "sorry", at: F.t0)
        try world.command("u-1", credit)
        #expect(try world.command("u-1", credit) == [])
        #expect(world.balance("u-1", "coins") == 50)
    }
}

@Suite struct IdempotencyKeyReuseTests {
    @Test func theSameKeyWithAnotherAmountOrCurrencyIsRefused() throws {
        var world = World()
        world.record(F.consumable("5000"))
        try world.claim("5000", for: "u-1")
        #expect(try world.debit("u-1", "coins", 30, key: "k").count == 1)
        #expect(try world.debit("u-1", "coins", 30, key: "k").isEmpty)
        #expect(throws: Rejection.idempotencyKeyReused(currency: "coins", amount: 30)) {
            try world.debit("u-1", "coins", 31, key: "k")
        }
        #expect(throws: Rejection.idempotencyKeyReused(currency: "coins", amount: 30)) {
            try world.debit("u-1", "gems", 30, key: "k")
        }
        #expect(world.balance("u-1", "coins") == 70)
    }
}
