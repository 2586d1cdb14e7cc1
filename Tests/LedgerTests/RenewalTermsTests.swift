import JSON
import Testing

@testable import Ledger

/// api.md §8's renewal-info fields (API 1.12–1.18): stored only when present, so renewal infos
/// recorded before keep their bytes; part of the same-millisecond order; shown as the
/// subscription's `renewal`.
@Suite struct RenewalTermsTests {
    /// A renewal info with every field of the next renewal's terms.
    static var terms: RenewalInfo {
        var r = F.renewal(signed: F.t0 + 11)
        r.offerType = 4
        r.renewalPrice = 4_990
        r.currency = "EUR"
        r.offerDiscountType = "ONE_TIME"
        r.offerPeriod = "P1M"
        r.offerIdentifier = "win.back \"1\""
        r.eligibleWinBackOfferIds = ["wb,1", "wb|2", "wb \"3\""]
        r.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        r.appTransactionId = "704289572311524"
        return r
    }

    @Test func aRenewalInfoStoredBeforeTheNewFieldsReadsAndWritesTheSame() throws {
        let old = F.renewal(signed: F.t0)
        let stored = Array(
            #"{"originalTransactionId":"1000","autoRenewProductId":"com.example.monthly","autoRenewStatus":1,"isInBillingRetryPeriod":false,"signedDate":\#(F.t0),"environment":"Production"}"#
                .utf8)
        let read = try LedgerEvent.decode(type: "RenewalInfoRecorded", schemaVersion: 1, data: stored)
        guard case .renewalInfoRecorded(let info) = read else {
            Issue.record("\(read)")
            return
        }
        #expect(info.renewalPrice == nil && info.currency == nil && info.eligibleWinBackOfferIds == nil)
        #expect(info.offerDiscountType == nil && info.offerPeriod == nil && info.offerIdentifier == nil)
        #expect(info.appAccountToken == nil && info.appTransactionId == nil)
        #expect(read.encode() == stored, "\(String(decoding: read.encode(), as: UTF8.self))")
        #expect(old.originalTransactionId == info.originalTransactionId)
    }

    @Test func theWinBackOfferIdsAreStoredAsTheTextOfAJSONArrayInApplesOrder() throws {
        let bytes = LedgerEvent.renewalInfoRecorded(Self.terms).encode()
        let json = try JSONValue.parse(bytes)
        // A flat object: the list is one string, whatever characters the ids hold.
        let text = json["eligibleWinBackOfferIds"]?.stringValue
        #expect(text == #"["wb,1","wb|2","wb \"3\""]"#)
        #expect(try JSONValue.parse(text ?? "") == .array(["wb,1", "wb|2", "wb \"3\""]))
        #expect(json["renewalPrice"]?.int64Value == 4_990)
        #expect(json["offerDiscountType"]?.stringValue == "ONE_TIME")
        #expect(
            try LedgerEvent.decode(type: "RenewalInfoRecorded", schemaVersion: 1, data: bytes)
                == .renewalInfoRecorded(Self.terms))
        // An empty list is kept as such (Apple said: none), apart from an absent one.
        var none = Self.terms
        none.eligibleWinBackOfferIds = []
        let empty = LedgerEvent.renewalInfoRecorded(none).encode()
        #expect(try JSONValue.parse(empty)["eligibleWinBackOfferIds"]?.stringValue == "[]")
        #expect(
            try LedgerEvent.decode(type: "RenewalInfoRecorded", schemaVersion: 1, data: empty)
                == .renewalInfoRecorded(none))
    }

    /// Two versions signed in the same millisecond that differ only in a new field are still
    /// ordered one way, whichever arrives first (the content decides, never arrival).
    @Test(
        arguments: [
            { (r: inout RenewalInfo) in r.renewalPrice = 5_990 },
            { (r: inout RenewalInfo) in r.currency = "USD" },
            { (r: inout RenewalInfo) in r.offerDiscountType = "FREE_TRIAL" },
            { (r: inout RenewalInfo) in r.offerPeriod = "P3M" },
            { (r: inout RenewalInfo) in r.offerIdentifier = "other" },
            { (r: inout RenewalInfo) in r.eligibleWinBackOfferIds = ["wb|2", "wb,1"] },
            { (r: inout RenewalInfo) in r.appAccountToken = "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f" },
            { (r: inout RenewalInfo) in r.appTransactionId = "1" },
        ] as [@Sendable (inout RenewalInfo) -> Void])
    func sameMillisecondVersionsDifferingInANewFieldAreOrdered(change: @Sendable (inout RenewalInfo) -> Void) {
        let a = Self.terms
        var b = a
        change(&b)
        #expect(a != b)
        #expect(a.supersedes(b) != b.supersedes(a))
        let first = Chain.fold([.renewalInfoRecorded(a), .renewalInfoRecorded(b)])
        let second = Chain.fold([.renewalInfoRecorded(b), .renewalInfoRecorded(a)])
        #expect(first.latestRenewalInfo == second.latestRenewalInfo)
    }

    @Test func theSubscriptionShowsTheNewestRenewalInfosTerms() throws {
        let bought = F.period("1000", start: F.t0)
        let before = Chain.fold([.transactionRecorded(bought)])
        let view = SubscriptionView(originalTransactionId: "1000", judged: before.status(at: F.t0 + F.day)!)
        #expect(view.renewal == nil)
        var w = JSONWriter()
        view.write(to: &w)
        #expect(String(decoding: w.bytes, as: UTF8.self).hasSuffix(#""renewal":null}"#))

        let after = Chain.fold([.transactionRecorded(bought), .renewalInfoRecorded(Self.terms)])
        let shown = SubscriptionView(originalTransactionId: "1000", judged: after.status(at: F.t0 + F.day)!)
        var s = JSONWriter()
        shown.write(to: &s)
        let json = try JSONValue.parse(s.bytes)
        #expect(
            json["renewal"]
                == .object([
                    "renewalPrice": 4_990, "currency": "EUR", "offerType": 4, "offerDiscountType": "ONE_TIME",
                    "offerPeriod": "P1M", "offerIdentifier": .string("win.back \"1\""),
                    "eligibleWinBackOfferIds": .array(["wb,1", "wb|2", "wb \"3\""]),
                    "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                ]), "\(json)")
        // Display only: status and auto-renew are what they were without the terms.
        #expect(shown.status == view.status && shown.autoRenew == view.autoRenew && shown.expiresAt == view.expiresAt)
    }
}
