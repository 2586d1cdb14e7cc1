import Testing

@testable import Ledger

/// Promotional grants (api.md §6) as the domain decides and folds them: time comes in as a value.
@Suite struct PromotionalGrantTests {
    let t0 = F.t0, day = F.day, hour = F.hour
    let id1 = "grt_00000000000000000000000000000001"
    let id2 = "grt_00000000000000000000000000000002"

    func promote(
        _ state: Account, id: String, entitlement: String = "pro", _ term: PromotionalGrantTerm,
        reason: String = "sorry",
        key: String? = "k", at: Int64
    ) throws(Rejection) -> [LedgerEvent] {
        try Account.decide(
            .promote(
                userId: "u-1", grantId: id, entitlement: entitlement, term: term, reason: reason,
                idempotencyKey: key, at: at), state)
    }

    func revoke(_ state: Account, id: String, at: Int64) throws(Rejection) -> [LedgerEvent] {
        try Account.decide(.revokePromotion(userId: "u-1", grantId: id, at: at), state)
    }

    func customer(_ account: Account, chains: [String: ChainState] = [:], at now: Int64) -> Customer {
        CustomerView.build(userId: "u-1", account: account, chains: chains, catalog: F.catalog, at: now, version: 1)
    }

    var sevenDays: PromotionalGrantTerm { .duration(ISODuration("P7D")!) }

    @Test func aDurationGrantRunsFromItsInstantAndShowsAsPromotional() throws {
        let events = try promote(.initial, id: id1, sevenDays, at: t0)
        #expect(
            events == [
                .promotionalGranted(
                    PromotionalGrant(
                        userId: "u-1", grantId: id1, entitlement: "pro", expiresAt: t0 + 7 * day, duration: "P7D",
                        reason: "sorry", idempotencyKey: "k", at: t0))
            ])
        let account = Account.fold(events)
        let pro = customer(account, at: t0 + hour).entitlements["pro"]
        #expect(pro?.active == true)
        #expect(pro?.source == .promotional)
        #expect(pro?.expiresAt == t0 + 7 * day)
        #expect(pro?.grantId == id1)
        #expect(pro?.productId == nil)
        #expect(customer(account, at: t0 + 7 * day).entitlements["pro"]?.active == false)
    }

    @Test func calendarMonthsClampToTheMonthsLength() throws {
        let jan31: Int64 = 1_769_817_600_000  // 2026-01-31T00:00:00Z
        let events = try promote(.initial, id: id1, .duration(ISODuration("P1M")!), at: jan31)
        guard case .promotionalGranted(let grant)? = events.first else {
            Issue.record("no grant")
            return
        }
        #expect(grant.expiresAt == 1_772_236_800_000)  // 2026-02-28T00:00:00Z
    }

    @Test func theSameKeyAndRequestDecidesNothingAndAnotherRequestIsRefused() throws {
        let account = Account.fold(try promote(.initial, id: id1, sevenDays, at: t0))
        // A retry an hour later: the same duration is the same request, though its end would differ.
        #expect(try promote(account, id: id1, sevenDays, at: t0 + hour) == [])
        #expect(throws: Rejection.grantIdempotencyKeyReused(grantId: id1)) {
            try promote(account, id: id1, .duration(ISODuration("P8D")!), at: t0 + hour)
        }
        #expect(throws: Rejection.grantIdempotencyKeyReused(grantId: id1)) {
            try promote(account, id: id1, entitlement: "plus", sevenDays, at: t0 + hour)
        }
        #expect(throws: Rejection.grantIdempotencyKeyReused(grantId: id1)) {
            try promote(account, id: id1, sevenDays, reason: "other", at: t0 + hour)
        }
        #expect(throws: Rejection.grantIdempotencyKeyReused(grantId: id1)) {
            try promote(account, id: id1, .until(t0 + 7 * day), at: t0)
        }
    }

    @Test func aGrantEndingBeforeItStartsIsRefused() {
        #expect(throws: Rejection.grantEndsInPast(expiresAt: t0)) { try promote(.initial, id: id1, .until(t0), at: t0) }
    }

    @Test func theGrantReachingFurthestDecidesExpiryAndSource() throws {
        var account = Account.fold(try promote(.initial, id: id1, .until(t0 + 3 * day), at: t0))
        account = Account.fold(try promote(account, id: id2, .until(t0 + 9 * day), key: nil, at: t0), into: account)
        var pro = customer(account, at: t0).entitlements["pro"]
        #expect(pro?.expiresAt == t0 + 9 * day)
        #expect(pro?.grantId == id2)
        // Revoking the furthest one: the other still gives access, until its own end.
        account = Account.fold(try revoke(account, id: id2, at: t0 + day), into: account)
        pro = customer(account, at: t0 + day).entitlements["pro"]
        #expect(pro?.active == true)
        #expect(pro?.grantId == id1)
        #expect(pro?.expiresAt == t0 + 3 * day)
    }

    @Test func aGrantAgainstAPurchaseTheFurthestWins() throws {
        var world = World()
        try world.claim("1000", for: "u-1")
        let period = F.period("1000", start: t0)  // a month
        world.record(period)
        let longer = Account.fold(
            try promote(world.accounts["u-1"]!, id: id1, .until(t0 + 60 * day), at: t0),
            into: world.accounts["u-1"]!)
        var pro = customer(longer, chains: world.chains, at: t0 + day).entitlements["pro"]
        #expect(pro?.source == .promotional)
        #expect(pro?.expiresAt == t0 + 60 * day)
        let shorter = Account.fold(
            try promote(world.accounts["u-1"]!, id: id1, sevenDays, at: t0),
            into: world.accounts["u-1"]!)
        pro = customer(shorter, chains: world.chains, at: t0 + day).entitlements["pro"]
        #expect(pro?.source == .subscription)
        #expect(pro?.expiresAt == period.expiresDate)
        #expect(pro?.grantId == nil)
    }

    @Test func revokingEndsAccessAtOnceAndKeepsTheEntitlementListed() throws {
        let granted = Account.fold(try promote(.initial, id: id1, sevenDays, at: t0))
        let events = try revoke(granted, id: id1, at: t0 + day)
        #expect(
            events == [
                .promotionalRevoked(
                    PromotionalRevocation(userId: "u-1", grantId: id1, entitlement: "pro", at: t0 + day))
            ])
        let revoked = Account.fold(events, into: granted)
        let pro = customer(revoked, at: t0 + day).entitlements["pro"]
        #expect(pro?.active == false)
        #expect(pro?.expiresAt == t0 + day)
        #expect(pro?.source == .promotional)
        // Again, or after it ran out: nothing to record.
        #expect(try revoke(revoked, id: id1, at: t0 + 2 * day) == [])
        #expect(try revoke(granted, id: id1, at: t0 + 8 * day) == [])
        #expect(throws: Rejection.unknownGrant(grantId: id2)) { try revoke(granted, id: id2, at: t0) }
    }

    @Test func theDocumentChangesByItselfWhenAGrantRunsOut() throws {
        let account = Account.fold(try promote(.initial, id: id1, sevenDays, at: t0))
        #expect(CustomerView.nextChange(account: account, chains: [:], after: t0) == t0 + 7 * day)
        #expect(CustomerView.nextChange(account: account, chains: [:], after: t0 + 7 * day) == nil)
        let revoked = Account.fold(try revoke(account, id: id1, at: t0 + day), into: account)
        #expect(CustomerView.nextChange(account: revoked, chains: [:], after: t0 + day) == nil)
    }

    @Test func theFeedSaysGrantRevokeAndExpiry() throws {
        let facts = { (account: Account) in ChangeDetector.Facts(account: account, chains: [:], version: 1) }
        let grantEvents = try promote(.initial, id: id1, sevenDays, at: t0)
        let granted = Account.fold(grantEvents)
        let step = ChangeDetector.written(
            userId: "u-1", before: facts(.initial), after: facts(granted), events: grantEvents, catalog: F.catalog,
            at: t0)
        #expect(step?.changes.map(\.type) == [.promotionalGrant])
        #expect(step?.changes.first?.entitlementIds == ["pro"])
        #expect(step?.changes.first?.details["grantId"]?.stringValue == id1)
        #expect(step?.changes.first?.details["duration"]?.stringValue == "P7D")

        let expiry = ChangeDetector.elapsed(
            userId: "u-1", facts: facts(granted), catalog: F.catalog, from: t0, to: t0 + 30 * day)
        #expect(expiry.map(\.at) == [t0 + 7 * day])
        #expect(expiry.first?.changes.map(\.type) == [.expiration])
        #expect(expiry.first?.changes.first?.entitlementIds == ["pro"])

        let revokeEvents = try revoke(granted, id: id1, at: t0 + day)
        let revoked = Account.fold(revokeEvents, into: granted)
        let revokeStep = ChangeDetector.written(
            userId: "u-1", before: facts(granted), after: facts(revoked), events: revokeEvents, catalog: F.catalog,
            at: t0 + day)
        #expect(revokeStep?.changes.map(\.type) == [.promotionalRevoke])  // no EXPIRATION besides it
        #expect(
            ChangeDetector.elapsed(
                userId: "u-1", facts: facts(revoked), catalog: F.catalog, from: t0 + day, to: t0 + 30 * day
            ).isEmpty)
    }

    @Test func oldAdminGrantsFoldAsBefore() throws {
        let old = Account.fold([
            .entitlementGranted(userId: "u-1", entitlement: "vip", reason: "s", expiresAt: t0 + day, at: t0)
        ])
        let vip = customer(old, at: t0).entitlements["vip"]
        #expect(vip?.source == .admin)
        #expect(vip?.grantId == nil)
        let revoked = Account.fold(
            [.entitlementRevoked(userId: "u-1", entitlement: "vip", reason: "s", at: t0 + hour)], into: old)
        #expect(customer(revoked, at: t0 + hour).entitlements["vip"] == nil)
    }
}
