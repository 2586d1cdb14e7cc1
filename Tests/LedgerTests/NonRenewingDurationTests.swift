import Testing

@testable import Ledger

/// docs/api.md §1: a non-renewing product with a `duration` gives access from the purchase for that
/// long; a purchase of the same product while one runs extends it from its end.
@Suite struct NonRenewingDurationTests {
    static let pass = "com.example.game.pass30"
    var world = World()

    init() {
        world.catalog.products[Self.pass] = Product(
            type: .nonRenewing, entitlements: ["vip"], duration: ISODuration("P30D"))
    }

    func pass(_ tid: String, at: Int64, revoked: Int64? = nil) -> Transaction {
        F.oneOff(tid, product: Self.pass, type: "Non-Renewing Subscription", at: at, revoked: revoked)
    }

    @Test func accessLastsTheDurationFromThePurchase() throws {
        var world = world
        world.record(pass("9000", at: F.t0))
        try world.claim("9000", for: "u-1")
        let end = F.t0 + 30 * F.day
        #expect(world.customer(at: end - 1).entitlements["vip"]?.active == true)
        #expect(world.customer(at: end - 1).entitlements["vip"]?.expiresAt == end)
        #expect(world.customer(at: end).entitlements["vip"]?.active == false)
        #expect(world.customer(at: end).subscriptions.first?.status == .expired)
        #expect(
            CustomerView.nextChange(
                account: world.accounts["u-1"]!, chains: world.chains, catalog: world.catalog, after: F.t0) == end)
    }

    @Test func aSecondPurchaseWhileRunningStacksFromTheEnd() throws {
        var world = world
        world.record(pass("9000", at: F.t0))
        world.record(pass("9001", at: F.t0 + 10 * F.day))
        try world.claim("9000", for: "u-1")
        try world.claim("9001", for: "u-1")
        let end = F.t0 + 60 * F.day
        #expect(world.customer(at: F.t0 + 31 * F.day).entitlements["vip"]?.active == true)
        #expect(world.customer(at: F.t0 + 11 * F.day).entitlements["vip"]?.expiresAt == end)
        #expect(world.customer(at: end).entitlements["vip"]?.active == false)
        #expect(world.customer(at: F.t0 + F.day).subscriptions.map(\.expiresAt) == [F.t0 + 30 * F.day, end])
    }

    @Test func aPurchaseAfterAGapStartsAfresh() throws {
        var world = world
        world.record(pass("9000", at: F.t0))
        world.record(pass("9001", at: F.t0 + 40 * F.day))
        try world.claim("9000", for: "u-1")
        try world.claim("9001", for: "u-1")
        #expect(world.customer(at: F.t0 + 35 * F.day).entitlements["vip"]?.active == false)
        #expect(world.customer(at: F.t0 + 41 * F.day).entitlements["vip"]?.expiresAt == F.t0 + 70 * F.day)
    }

    @Test func aRefundedPurchaseGivesNothingAndPushesNothingBack() throws {
        var world = world
        world.record(pass("9000", at: F.t0))
        world.record(pass("9001", at: F.t0 + 10 * F.day, revoked: F.t0 + 12 * F.day))
        try world.claim("9000", for: "u-1")
        try world.claim("9001", for: "u-1")
        let doc = world.customer(at: F.t0 + 13 * F.day)
        #expect(doc.entitlements["vip"]?.expiresAt == F.t0 + 30 * F.day)
        #expect(doc.subscriptions.map(\.status).sorted { $0.rawValue < $1.rawValue } == [.active, .revoked])
    }

    @Test func withoutADurationItIsGrantedUntilRevoked() throws {
        var world = World()
        world.record(F.oneOff("9100", product: F.season, type: "Non-Renewing Subscription", at: F.t0))
        try world.claim("9100", for: "u-1")
        #expect(world.customer(at: F.t0 + 900 * F.day).entitlements["season"]?.active == true)
    }

    @Test func calendarMonthsAndYearsClampToTheMonthsEnd() throws {
        let jan31: Int64 = 1_769_817_600_000  // 2026-01-31T00:00:00Z
        #expect(ISODuration("P1M")!.adding(to: jan31) == 1_772_236_800_000)  // 2026-02-28
        #expect(ISODuration("P1Y")!.adding(to: 1_709_164_800_000) == 1_740_700_800_000)  // 2024-02-29 → 2025-02-28
        #expect(ISODuration("P2W")!.adding(to: F.t0) == F.t0 + 14 * F.day)
        #expect(ISODuration("PT1H30M")!.adding(to: F.t0) == F.t0 + 90 * 60_000)
        #expect(ISODuration("P1Y2M3DT4H")!.months == 14)
    }

    @Test(arguments: ["", "P", "7D", "P7", "PT", "P0D", "P-1D", "P1.5D", "P1H", "PT1D", "P1DT", "P99999999D"])
    func malformedDurationsAreRefused(text: String) {
        #expect(ISODuration(text) == nil)
    }
}
