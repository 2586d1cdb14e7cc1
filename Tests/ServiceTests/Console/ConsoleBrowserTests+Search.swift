import AppStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

extension ConsoleBrowserTests {
    /// The Customer page's one search box (api.md §7 lookups): a transactionId, an
    /// originalTransactionId, an appAccountToken (any case) and an App Store order ID each open
    /// the customer behind them and say which matched; an order nobody owns says so and stays;
    /// anything else is a user id. On a service of its own whose Apple is the stand-in.
    @Test func theSearchBoxOpensTheCustomerBehindAnyIdAndSaysWhichMatched() throws {
        let apple = try AppleServerAPIStandIn(key: AppStoreServerKey.testKey())
        defer { apple.stop() }
        let shop = try SyncTests.service(apple)
        defer { shop.stop() }
        let api = shop.client()
        let now = shop.clock.now
        let first = Mint.transaction(
            "5200001", product: TestService.monthly, purchase: now - 40 * day, expires: now - 10 * day,
            signed: now - 40 * day)
        #expect(try api.purchase("u-search", Mint.signed(first)).status == 200)
        let renewal = Mint.transaction(
            "5200002", chain: "5200001", product: TestService.monthly, purchase: now - 10 * day,
            expires: now + 20 * day,
            signed: now - 10 * day)
        #expect(try api.notify(Mint.notification("DID_RENEW", transaction: renewal)).status == 200)
        let token = try #require(
            try api.post("/v1/users/u-search/app-account-token", [:]).json["appAccountToken"]?.stringValue)
        #expect(
            try api.purchase(
                "u-other",
                Mint.signed(
                    Mint.transaction(
                        "5200003", product: TestService.removeAds, type: "Non-Consumable", purchase: now, expires: nil,
                        signed: now))
            ).status == 200)
        // Two orders only Apple knows: one carries u-search's token, one nobody's.
        let coins = { (id: String, extra: [String: JSONValue]) in
            Mint.signed(
                Mint.transaction(
                    id, product: TestService.coins, type: "Consumable", purchase: now - hour, expires: nil,
                    signed: now - hour, extra))
        }
        apple.production.addTransaction(coins("5200011", ["appAccountToken": .string(token)]), orderId: "MK5SEARCH1")
        apple.production.addTransaction(coins("5200012", [:]), orderId: "MK5NOBODY2")

        try browser.navigate(shop.app.url + "/console")
        try browser.type(try waitFor("#api-key"), try #require(shop.keys["all"]))
        try browser.click(try browser.find("#login-form button[type=submit]"))

        func search(_ text: String, says sentence: String, opens userId: String) throws {
            try lookUp(text)
            if !sentence.isEmpty { try browser.waitForText("#lookup-match", containing: sentence) }
            try browser.waitForText("#customer-id", containing: userId)
            #expect(try browser.text(try browser.find("#customer-id")) == userId)
            if sentence.isEmpty {
                #expect(try browser.text(try browser.find("#lookup-match")) == "", "\(text): nothing matched")
            }
        }
        try search("5200002", says: "Matched transactionId 5200002 → user u-search (chain 5200001).", opens: "u-search")
        try search("u-other", says: "", opens: "u-other")  // a user id: no lookup, nothing said
        try search("5200001", says: "Matched originalTransactionId 5200001 → user u-search.", opens: "u-search")
        try search("5200003", says: "Matched originalTransactionId 5200003 → user u-other.", opens: "u-other")
        try search(
            token.uppercased(), says: "Matched appAccountToken \(token.uppercased()) → user u-search.",
            opens: "u-search")
        try search(
            "MK5SEARCH1", says: "Matched order ID MK5SEARCH1 → user u-search (chain 5200011).", opens: "u-search")
        try browser.waitForText("#balances", containing: "100")  // the order's coins, recorded by the lookup
        try shoot("console-search")

        // An order nobody owns: said, and the page stays where it was.
        try lookUp("MK5NOBODY2")
        try browser.waitForText(
            "#lookup-match", containing: "Matched order ID MK5NOBODY2 → chain 5200012, which no user has claimed.")
        #expect(try browser.text(try browser.find("#customer-id")) == "u-search")
        // Digits no transaction has are a user id (both lookups answered 404).
        try search("5299999", says: "", opens: "5299999")
        try browser.waitForText("#never-seen", containing: "No purchases yet")
        try expectCleanLogs(allowedStatuses: [404])
    }
}
