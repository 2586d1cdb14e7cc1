/// One attempt to answer a `CONSUMPTION_REQUEST` with Send Consumption Information (v2): what
/// was sent and how Apple answered (docs/api.md §5). Appended to the chain's stream, one event
/// per attempt; folds keep no state from it (it grants nothing), it is the record support
/// reads when a refund was decided.
public struct ConsumptionAnswer: Sendable, Hashable {
    /// The notification that asked.
    public var notificationUUID: String
    public var transactionId: String
    public var originalTransactionId: String
    public var environment: String?
    // What was sent (Apple's field names).
    public var customerConsented: Bool
    public var sampleContentProvided: Bool
    public var deliveryStatus: String
    public var consumptionPercentage: Int64?
    public var refundPreference: String?
    // What Apple answered.
    public var outcome: AppleRequestOutcome
    public var appleErrorCode: Int64?
    /// Why it did not go through, for a person (never Apple's whole body).
    public var detail: String?
    /// 1 for the first attempt.
    public var attempt: Int64
    public var at: Int64

    public init(
        notificationUUID: String, transactionId: String, originalTransactionId: String, environment: String?,
        customerConsented: Bool, sampleContentProvided: Bool, deliveryStatus: String, consumptionPercentage: Int64?,
        refundPreference: String?, outcome: AppleRequestOutcome, appleErrorCode: Int64? = nil, detail: String? = nil,
        attempt: Int64, at: Int64
    ) {
        self.notificationUUID = notificationUUID
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
        self.outcome = outcome
        self.appleErrorCode = appleErrorCode
        self.detail = detail
        self.attempt = attempt
        self.at = at
    }
}
