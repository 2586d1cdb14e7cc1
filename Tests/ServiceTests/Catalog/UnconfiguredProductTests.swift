import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// A purchase of a product missing from the catalog is recorded and never silent (api.md §1):
/// one warning per product, `iap_unconfigured_product_transactions_total{bundleId,productId}`,
/// `GET /v1/admin/catalog/unconfigured` read from the database, and the console's banner.
@Suite(.tags(.database)) struct UnconfiguredProductTests {
    static let path = "/v1/admin/catalog/unconfigured"
    static let mystery = "com.example.mystery"
    static let typo = "com.example.coins1000"

    static func consumable(_ id: String, _ product: String, now: Int64) -> String {
        Mint.signed(
            Mint.transaction(id, product: product, type: "Consumable", purchase: now, expires: nil, signed: now))
    }

    /// The value of one series in a Prometheus text page (nil when the page has no such line).
    static func sample(_ page: String, _ series: String) -> Double? {
        page.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }

    /// The list once the analytics projection has caught up with `expected` transactions in all.
    static func products(_ api: ServiceHTTPClient, transactions expected: Int64) throws -> [JSONValue] {
        var last: ServiceHTTPClient.Response?
        try eventually("the list never counted \(expected) transactions: \(last?.text ?? "no answer")", within: 30) {
            last = try? api.get(path)
            let entries = last?.json["products"]?.arrayValue ?? []
            return entries.compactMap { $0["transactions"]?.int64Value }.reduce(0, +) == expected
        }
        return try #require(last?.json["products"]?.arrayValue)
    }

    @Test func aPurchaseOfAnUnconfiguredProductIsRecordedCountedLoggedOnceAndListed() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        // Two users buy the same unknown product (three transactions), one buys another unknown
        // one, and a configured product is bought beside them.
        let bought: [(user: String, id: String, product: String)] = [
            ("u-1", "8100001", Self.mystery), ("u-2", "8100002", Self.mystery), ("u-1", "8100003", Self.mystery),
            ("u-2", "8100004", Self.typo), ("u-1", "8100005", TestService.coins),
        ]
        for purchase in bought {
            let response = try api.purchase(purchase.user, Self.consumable(purchase.id, purchase.product, now: now))
            #expect(response.status == 200, "\(response.text)")
            #expect(response.json["transactions"]?[0]?["result"]?.stringValue == "recorded", "\(response.text)")
        }
        // A duplicate is no new transaction: counted nowhere.
        #expect(
            try api.purchase("u-1", Self.consumable("8100001", Self.mystery, now: now)).json["transactions"]?[0]?[
                "result"]?.stringValue == "duplicate")

        // Recorded as before: granted by its own product id.
        let user = try api.user("u-1")
        #expect(
            user["balances"]?[Self.mystery]?.int64Value == 2,
            "a consumable without grants credits its product id: \(user)")

        let unconfigured = bought.filter { $0.product != TestService.coins }
        func transactions(_ product: String) -> Int64 { Int64(unconfigured.filter { $0.product == product }.count) }
        func users(_ product: String) -> Int64 {
            Int64(Set(unconfigured.filter { $0.product == product }.map(\.user)).count)
        }

        // The counter, per product.
        let metrics = try service.client(nil).get("/metrics").text
        for product in [Self.mystery, Self.typo] {
            let series =
                #"iap_unconfigured_product_transactions_total{bundleId="\#(TestService.bundleId)",productId="\#(product)"}"#
            #expect(Self.sample(metrics, series) == Double(transactions(product)), "\(series) in\n\(metrics)")
        }
        #expect(!metrics.contains(#"productId="\#(TestService.coins)""#), "a configured product is not counted")

        // One warning per product, naming the app and the product, however many transactions.
        let warnings = service.log.text.split(separator: "\n").filter {
            $0.contains("level=warning") && $0.contains("missing from the catalog")
        }
        for product in [Self.mystery, Self.typo] {
            let lines = warnings.filter { $0.contains("productId=\(product)") }
            #expect(lines.count == 1, "one line for \(product): \(warnings)")
            #expect(lines.first?.contains("bundleId=\(TestService.bundleId)") == true, "\(lines)")
        }
        #expect(warnings.count == 2, "\(warnings)")

        // The list, from the database.
        let list = try Self.products(api, transactions: Int64(unconfigured.count))
        #expect(list.compactMap { $0["productId"]?.stringValue }.sorted() == [Self.typo, Self.mystery].sorted())
        for product in [Self.mystery, Self.typo] {
            let entry = try #require(list.first { $0["productId"]?.stringValue == product })
            #expect(entry["bundleId"]?.stringValue == TestService.bundleId)
            #expect(entry["transactions"]?.int64Value == transactions(product), "\(entry)")
            #expect(entry["users"]?.int64Value == users(product), "\(entry)")
            let first = try #require(entry["firstSeen"]?.stringValue.flatMap(RFC3339.parse))
            let last = try #require(entry["lastSeen"]?.stringValue.flatMap(RFC3339.parse))
            #expect(first <= last)
            #expect(abs(first - Timestamp.nowMillis()) < 10 * 60_000, "recorded just now: \(entry)")
        }

        // Another instance on the same database (as after a restart) lists the same, though
        // this process counted nothing: the list is the database's, the counter the process's.
        let other = try TestService(sharing: service)
        defer { other.stop() }
        let again = try Self.products(other.client(), transactions: Int64(unconfigured.count))
        #expect(again == list)
        let otherMetrics = try other.client(nil).get("/metrics").text
        #expect(!otherMetrics.contains(#"productId="\#(Self.mystery)""#), "\(otherMetrics)")

        // Admin scope only.
        for scope in ["read", "write"] { #expect(try service.client(scope).get(Self.path).status == 403) }
        #expect(try service.client(nil).get(Self.path).status == 401)
    }

    @Test func nothingUnconfiguredListsNothingAndTheConsoleShowsTheBannerFromTheList() throws {
        let service = try TestService()
        defer { service.stop() }
        let api = service.client()
        let now = service.clock.now
        #expect(try api.purchase("u-1", Self.consumable("8200001", TestService.coins, now: now)).status == 200)
        let empty = try api.get(Self.path)
        #expect(empty.status == 200, "\(empty.text)")
        #expect(empty.json["products"] == .array([]), "\(empty.text)")
        #expect(!service.log.text.contains("missing from the catalog"))

        // The banner: a place on the page, filled by the script from this endpoint.
        let client = service.client(nil)
        let page = try client.get("/console").text
        #expect(page.contains(#"id="unconfigured""#), "the page has the banner's place")
        let script = try client.get("/console/app.js").text
        #expect(script.contains("'\(Self.path)'"), "app.js asks the endpoint")
        #expect(script.contains("unconfigured.hidden = products.length === 0"), "shown only when the list is not empty")
    }
}
