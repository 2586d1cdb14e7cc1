/// An app's Retention Messaging rules (config `retention.rules`, docs/api.md §8): Apple asks
/// what to show a subscriber who is about to cancel, and the first rule that matches the
/// request decides. Pure: the request, the chain's tenure and the rules in, a choice out.
public struct RetentionRules: Sendable, Hashable {
    /// What a rule answers: Apple's `RealtimeResponseBody` members. Message ids are the UUIDs
    /// of messages (and their images) uploaded to App Store Connect, kept lower case here.
    public enum Action: Sendable, Hashable {
        case message(messageId: String)
        case alternateProduct(productId: String, messageId: String?)
        case promotionalOffer(offerId: String, messageId: String?)

        public var kind: RetentionAnswer.Kind {
            switch self {
            case .message: .message
            case .alternateProduct: .alternateProduct
            case .promotionalOffer: .promotionalOffer
            }
        }
    }

    public struct Rule: Sendable, Hashable {
        /// nil: any product.
        public var productId: String?
        /// nil: any locale. A language ("en") matches its regions ("en-US", "en_GB"); a full
        /// locale matches itself; case and `_`/`-` do not matter.
        public var locale: String?
        /// nil: any tenure.
        public var minTenureMonths: Int64?
        public var action: Action

        public init(productId: String?, locale: String?, minTenureMonths: Int64?, action: Action) {
            self.productId = productId
            self.locale = locale
            self.minTenureMonths = minTenureMonths
            self.action = action
        }

        public func matches(productId: String, userLocale: String, tenureMonths: Int64) -> Bool {
            if let wanted = self.productId, wanted != productId { return false }
            if let wanted = locale, !Self.locale(userLocale, matches: wanted) { return false }
            if let minimum = minTenureMonths, tenureMonths < minimum { return false }
            return true
        }

        static func locale(_ userLocale: String, matches wanted: String) -> Bool {
            func normal(_ text: String) -> String { text.lowercased().replacingOccurrences("_", "-") }
            let user = normal(userLocale)
            let rule = normal(wanted)
            return user == rule || user.hasPrefix(rule + "-")
        }
    }

    public var rules: [Rule]

    public init(rules: [Rule]) { self.rules = rules }

    /// The first matching rule and its 0-based index; nil: none matches (the empty answer).
    public func choose(productId: String, userLocale: String, tenureMonths: Int64) -> (index: Int, rule: Rule)? {
        for (index, rule) in rules.enumerated()
        where rule.matches(productId: productId, userLocale: userLocale, tenureMonths: tenureMonths) {
            return (index, rule)
        }
        return nil
    }

    /// Whole calendar months from `start` (the chain's first purchase) to `end` (ms since 1970,
    /// UTC): the largest n with start + n months ≤ end, a month added as ISODuration adds it (the
    /// day clamped to the month's length). 0 when `end` is not after `start`.
    public static func tenureMonths(from start: Int64, to end: Int64) -> Int64 {
        guard end > start else { return 0 }
        let dayMillis: Int64 = 86_400_000
        func civil(_ instant: Int64) -> (Int64, Int64) {
            let day = instant >= 0 ? instant / dayMillis : (instant - dayMillis + 1) / dayMillis
            let (year, month, _) = ISODuration.civil(fromDays: day)
            return (year, month)
        }
        let (y1, m1) = civil(start)
        let (y2, m2) = civil(end)
        var months = (y2 * 12 + m2) - (y1 * 12 + m1)
        while months > 0, ISODuration("P\(months)M")!.adding(to: start) > end { months -= 1 }
        return max(months, 0)
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: Character, _ replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
