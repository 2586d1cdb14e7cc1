import Testing

@testable import Ledger

/// api.md §7's `sameAppleAccountAs` as the pure account decides it: a user without a token who
/// buys with an Apple Account other users bought with gets one hint per other user, once.
@Suite struct AppleAccountDecisionTests {
    let account = "704289572311524"

    @Test func eachOtherUserIsNotedOnceAndTheUserThemselvesNever() throws {
        let first = try Account.decide(
            .noteAppleAccount(userId: "u-2", appTransactionId: account, others: ["u-3", "u-1", "u-2"], at: F.t0),
            .initial)
        #expect(
            first == [
                .appleAccountShared(userId: "u-2", appTransactionId: account, sharedWith: "u-1", at: F.t0),
                .appleAccountShared(userId: "u-2", appTransactionId: account, sharedWith: "u-3", at: F.t0),
            ])
        let state = Account.fold(first)
        #expect(state.sameAppleAccountAs == ["u-1", "u-3"])
        let again = try Account.decide(
            .noteAppleAccount(userId: "u-2", appTransactionId: account, others: ["u-1", "u-3", "u-4"], at: F.t0 + 1),
            state)
        #expect(
            again == [.appleAccountShared(userId: "u-2", appTransactionId: account, sharedWith: "u-4", at: F.t0 + 1)])
        // Another Apple Account shared with a user already listed lists them once.
        let other = Account.fold(
            try Account.decide(
                .noteAppleAccount(userId: "u-2", appTransactionId: "999", others: ["u-1"], at: F.t0 + 2), state),
            into: state)
        #expect(other.sameAppleAccountAs == ["u-1", "u-3"])
        #expect(other.appleAccounts["999"] == ["u-1"])
    }

    /// A shared device seen with many users costs each at most `sameAppleAccountLimit` events.
    @Test func theHintNamesAtMostTheFirstTenUsersOfAnAppleAccount() throws {
        let others = (1...12).map { "u-\(100 + $0)" }  // u-101 … u-112
        let events = try Account.decide(
            .noteAppleAccount(userId: "u-2", appTransactionId: account, others: others, at: F.t0), .initial)
        #expect(events.count == 10)
        let state = Account.fold(events)
        #expect(state.sameAppleAccountAs == Array(others.prefix(10)))
        #expect(
            try Account.decide(
                .noteAppleAccount(userId: "u-2", appTransactionId: account, others: ["u-999"], at: F.t0), state) == [])
    }

    @Test func aUserWithAnAppAccountTokenGetsNoHint() throws {
        let state = Account.fold([
            .appAccountTokenRegistered(
                userId: "u-2", appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", minted: true, at: F.t0)
        ])
        #expect(
            try Account.decide(
                .noteAppleAccount(userId: "u-2", appTransactionId: account, others: ["u-1"], at: F.t0), state) == [])
    }

    @Test func theCustomerListsTheHintOnlyWhenThereIsOne() throws {
        let none = CustomerView.build(
            userId: "u-2", account: .initial, chains: [:], catalog: Catalog(), at: F.t0, version: 0)
        #expect(!String(decoding: none.jsonBytes(), as: UTF8.self).contains("sameAppleAccountAs"))
        let state = Account.fold([
            .appleAccountShared(userId: "u-2", appTransactionId: account, sharedWith: "u-1", at: F.t0)
        ])
        let hinted = CustomerView.build(
            userId: "u-2", account: state, chains: [:], catalog: Catalog(), at: F.t0, version: 1)
        #expect(
            String(decoding: hinted.jsonBytes(), as: UTF8.self).hasSuffix(
                #""balances":{},"sameAppleAccountAs":["u-1"],"version":1}"#))
    }
}
