import Testing

@testable import Ledger

/// The pure choice behind `POST /v1/apple/retention-message` (api.md §8).
@Suite struct RetentionRulesTests {
    static let day: Int64 = 86_400_000
    /// 2025-01-31T12:00:00Z.
    static let jan31 = ISODuration.days(fromCivil: 2025, 1, 31) * day + 12 * 3_600_000

    @Test func tenureCountsWholeCalendarMonthsFromTheFirstPurchase() {
        let start = Self.jan31
        // One month after Jan 31 is Feb 28 (the day clamped, as ISODuration adds a month).
        let feb28Noon = ISODuration.days(fromCivil: 2025, 2, 28) * Self.day + 12 * 3_600_000
        #expect(RetentionRules.tenureMonths(from: start, to: feb28Noon - 1) == 0)
        #expect(RetentionRules.tenureMonths(from: start, to: feb28Noon) == 1)
        // 2026-01-31 12:00 is 12 months; a millisecond before, 11.
        let nextYear = ISODuration.days(fromCivil: 2026, 1, 31) * Self.day + 12 * 3_600_000
        #expect(RetentionRules.tenureMonths(from: start, to: nextYear) == 12)
        #expect(RetentionRules.tenureMonths(from: start, to: nextYear - 1) == 11)
        #expect(RetentionRules.tenureMonths(from: start, to: start) == 0)
        #expect(RetentionRules.tenureMonths(from: start, to: start - Self.day) == 0)
    }

    static let rules = RetentionRules(rules: [
        .init(
            productId: "yearly", locale: nil, minTenureMonths: nil,
            action: .promotionalOffer(offerId: "o", messageId: nil)),
        .init(
            productId: nil, locale: "de", minTenureMonths: nil,
            action: .alternateProduct(productId: "yearly", messageId: "m2")),
        .init(productId: nil, locale: "en-GB", minTenureMonths: 6, action: .message(messageId: "m1")),
    ])

    @Test(
        arguments: [
            ("yearly", "de-DE", 0, 0),  // first match wins, though rule 1 matches too
            ("monthly", "de-DE", 0, 1),
            ("monthly", "DE_at", 0, 1),  // case and _ do not matter
            ("monthly", "dea", 0, nil),  // a language matches its regions, not a longer code
            ("monthly", "en_GB", 6, 2),
            ("monthly", "en-GB", 5, nil),  // below minTenureMonths
            ("monthly", "en-US", 12, nil),
            ("monthly", "en", 12, nil),  // a full rule locale does not match the bare language
        ] as [(String, String, Int64, Int?)])
    func theFirstMatchingRuleDecides(product: String, locale: String, tenure: Int64, expected: Int?) {
        #expect(Self.rules.choose(productId: product, userLocale: locale, tenureMonths: tenure)?.index == expected)
    }
}
