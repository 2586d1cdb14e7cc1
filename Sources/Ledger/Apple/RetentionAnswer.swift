import JSON

/// One Retention Messaging request Apple sent (`POST /v1/apple/retention-message`, docs/api.md
/// §8) and what the service answered. Appended to the chain's stream, one event per request;
/// folds keep no state from it (it grants nothing): it is the record the retention funnel
/// (`analytics.retention_requests`) reads, and what a replay keeps.
public struct RetentionAnswer: Sendable, Hashable {
    /// What the answer offered (Apple's `RealtimeResponseBody` member), or `none`: the empty
    /// answer, after which Apple shows its default message.
    public enum Kind: String, Sendable, Hashable {
        case message, alternateProduct, promotionalOffer, none
    }

    // What Apple sent (its `DecodedRealtimeRequestBody`, Apple's names).
    public var requestIdentifier: String
    public var originalTransactionId: String
    public var productId: String
    public var userLocale: String
    public var environment: String
    /// Apple's `signedDate`: when it asked.
    public var signedDate: Int64
    /// The configured app whose rules answered.
    public var bundleId: String
    /// Whole months since the chain's first purchase, as the rules saw them.
    public var tenureMonths: Int64
    /// The 0-based index of the matching rule in the app's `retention.rules`; nil: none matched.
    public var ruleIndex: Int64?
    public var answer: Kind
    public var messageIdentifier: String?
    /// `alternateProduct.productId`.
    public var alternateProductId: String?
    /// The promotional offer's `offerId`.
    public var offerIdentifier: String?
    public var at: Int64

    public init(
        requestIdentifier: String, originalTransactionId: String, productId: String, userLocale: String,
        environment: String, signedDate: Int64, bundleId: String, tenureMonths: Int64, ruleIndex: Int64?,
        answer: Kind, messageIdentifier: String? = nil, alternateProductId: String? = nil,
        offerIdentifier: String? = nil, at: Int64
    ) {
        self.requestIdentifier = requestIdentifier
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.userLocale = userLocale
        self.environment = environment
        self.signedDate = signedDate
        self.bundleId = bundleId
        self.tenureMonths = tenureMonths
        self.ruleIndex = ruleIndex
        self.answer = answer
        self.messageIdentifier = messageIdentifier
        self.alternateProductId = alternateProductId
        self.offerIdentifier = offerIdentifier
        self.at = at
    }

    /// Writes the fields into an open object.
    public func writeFields(to w: inout JSONWriter) {
        w.field("requestIdentifier", requestIdentifier)
        w.field("originalTransactionId", originalTransactionId)
        w.field("productId", productId)
        w.field("userLocale", userLocale)
        w.field("environment", environment)
        w.field("signedDate", signedDate)
        w.field("bundleId", bundleId)
        w.field("tenureMonths", tenureMonths)
        w.field("ruleIndex", ruleIndex)
        w.field("answer", answer.rawValue)
        w.field("messageIdentifier", messageIdentifier)
        w.field("alternateProductId", alternateProductId)
        w.field("offerIdentifier", offerIdentifier)
        w.field("at", at)
    }

    init(fields f: inout Fields) throws(EventDecodingError) {
        guard let kind = Kind(rawValue: try f.string(.answer)) else {
            throw EventDecodingError(type: f.type, schemaVersion: f.schemaVersion, message: "unknown answer")
        }
        self.init(
            requestIdentifier: try f.string(.requestIdentifier),
            originalTransactionId: try f.string(.originalTransactionId),
            productId: try f.string(.productId), userLocale: try f.string(.userLocale),
            environment: try f.string(.environment), signedDate: try f.int(.signedDate),
            bundleId: try f.string(.bundleId), tenureMonths: try f.int(.tenureMonths),
            ruleIndex: f.optionalInt(.ruleIndex),
            answer: kind, messageIdentifier: f.optionalString(.messageIdentifier),
            alternateProductId: f.optionalString(.alternateProductId),
            offerIdentifier: f.optionalString(.offerIdentifier),
            at: try f.int(.at))
    }
}
