import Testing

@testable import Ledger

/// api.md §7's token rules as the pure account decides them: one minted token for good,
/// registrations once each, and none of another user's.
@Suite struct AppAccountTokenDecisionTests {
    let a = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    let b = "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"

    @Test func theFirstMintIsRecordedAndLaterOnesDecideNothing() throws {
        let first = try Account.decide(.mintAppAccountToken(userId: "u-1", candidate: a, at: F.t0), .initial)
        #expect(first == [.appAccountTokenRegistered(userId: "u-1", appAccountToken: a, minted: true, at: F.t0)])
        let state = Account.fold(first)
        #expect(state.mintedAppAccountToken == a)
        #expect(state.appAccountTokens == [a])
        #expect(try Account.decide(.mintAppAccountToken(userId: "u-1", candidate: b, at: F.t0 + 1), state) == [])
    }

    @Test func aRegisteredTokenIsRecordedOnceAndAnotherUsersIsRefused() throws {
        let registered = try Account.decide(
            .registerAppAccountToken(userId: "u-1", appAccountToken: b, owner: nil, at: F.t0), .initial)
        #expect(registered == [.appAccountTokenRegistered(userId: "u-1", appAccountToken: b, minted: false, at: F.t0)])
        let state = Account.fold(registered)
        #expect(state.mintedAppAccountToken == nil)
        #expect(
            try Account.decide(
                .registerAppAccountToken(userId: "u-1", appAccountToken: b, owner: "u-1", at: F.t0), state)
                == [])
        #expect(throws: Rejection.appAccountTokenTaken(owner: "u-2")) {
            try Account.decide(
                .registerAppAccountToken(userId: "u-1", appAccountToken: a, owner: "u-2", at: F.t0), state)
        }
        #expect(Rejection.appAccountTokenTaken(owner: "u-2").code == "app_account_token_taken")
    }
}
