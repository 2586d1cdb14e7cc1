import JSON

extension ConsumptionAnswer {
    /// Writes the fields (Apple's names for what was sent) into an open object.
    public func writeFields(to w: inout JSONWriter) {
        w.field("notificationUUID", notificationUUID)
        w.field("transactionId", transactionId)
        w.field("originalTransactionId", originalTransactionId)
        w.field("environment", environment)
        w.field("customerConsented", customerConsented)
        w.field("sampleContentProvided", sampleContentProvided)
        w.field("deliveryStatus", deliveryStatus)
        w.field("consumptionPercentage", consumptionPercentage)
        w.field("refundPreference", refundPreference)
        w.field("outcome", outcome.rawValue)
        w.field("appleErrorCode", appleErrorCode)
        w.field("detail", detail)
        w.field("attempt", attempt)
        w.field("at", at)
    }

    init(fields f: inout Fields) throws(EventDecodingError) {
        self.init(
            notificationUUID: try f.string(.notificationUUID), transactionId: try f.string(.transactionId),
            originalTransactionId: try f.string(.originalTransactionId), environment: f.optionalString(.environment),
            customerConsented: f.optionalBool(.customerConsented) ?? false,
            sampleContentProvided: f.optionalBool(.sampleContentProvided) ?? false,
            deliveryStatus: try f.string(.deliveryStatus), consumptionPercentage: f.optionalInt(.consumptionPercentage),
            refundPreference: f.optionalString(.refundPreference), outcome: try f.outcome(),
            appleErrorCode: f.optionalInt(.appleErrorCode), detail: f.optionalString(.detail),
            attempt: try f.int(.attempt), at: try f.int(.at))
    }
}

extension RenewalExtension {
    /// Writes the fields (Apple's names for what was sent) into an open object.
    public func writeFields(to w: inout JSONWriter) {
        w.field("originalTransactionId", originalTransactionId)
        w.field("environment", environment)
        w.field("extendByDays", extendByDays)
        w.field("extendReasonCode", extendReasonCode)
        w.field("requestIdentifier", requestIdentifier)
        w.field("outcome", outcome.rawValue)
        w.field("effectiveDate", effectiveDate)
        w.field("webOrderLineItemId", webOrderLineItemId)
        w.field("appleErrorCode", appleErrorCode)
        w.field("detail", detail)
        w.field("at", at)
    }

    init(fields f: inout Fields) throws(EventDecodingError) {
        self.init(
            originalTransactionId: try f.string(.originalTransactionId), environment: f.optionalString(.environment),
            extendByDays: try f.int(.extendByDays), extendReasonCode: try f.int(.extendReasonCode),
            requestIdentifier: try f.string(.requestIdentifier), outcome: try f.outcome(),
            effectiveDate: f.optionalInt(.effectiveDate), webOrderLineItemId: f.optionalString(.webOrderLineItemId),
            appleErrorCode: f.optionalInt(.appleErrorCode), detail: f.optionalString(.detail), at: try f.int(.at))
    }
}

extension Fields {
    func outcome() throws(EventDecodingError) -> AppleRequestOutcome {
        guard let outcome = AppleRequestOutcome(rawValue: try string(.outcome)) else {
            throw EventDecodingError(type: type, schemaVersion: schemaVersion, message: "unknown outcome")
        }
        return outcome
    }
}
