import JSON

extension ConsumptionInfo {
    /// The per-app `consumption` settings of docs/api.md §5.
    public struct Settings: Sendable, Hashable {
        public var customerConsented: Bool
        public var sampleContentProvided: Bool
        public var refundPreference: RefundPreference?

        public init(customerConsented: Bool, sampleContentProvided: Bool, refundPreference: RefundPreference? = nil) {
            self.customerConsented = customerConsented
            self.sampleContentProvided = sampleContentProvided
            self.refundPreference = refundPreference
        }
    }

    /// [refundPreference](https://developer.apple.com/documentation/appstoreserverapi/refundpreference)
    public enum RefundPreference: String, Sendable, Hashable, CaseIterable {
        case decline = "DECLINE"
        case grantFull = "GRANT_FULL"
        case grantProrated = "GRANT_PRORATED"
    }

    /// The refund preference to send: the configured one, except `GRANT_PRORATED` where Apple
    /// would refuse it (it needs 0 < consumptionPercentage < 100000, auto-renewable subscriptions
    /// aside): then none, which Apple allows.
    public func refundPreference(_ settings: Settings) -> RefundPreference? {
        guard settings.refundPreference == .grantProrated, productType != .subscription else {
            return settings.refundPreference
        }
        return consumptionPercentage.map { $0 > 0 && $0 < 100_000 } ?? false ? .grantProrated : nil
    }

    /// The request body of Send Consumption Information v2 (`PUT
    /// /inApps/v2/transactions/consumption/{transactionId}`), keeping Apple's rules so that Apple
    /// does not answer 400:
    /// - no `consumptionPercentage` for an auto-renewable subscription, 0 unless DELIVERED
    ///   (both already true of `consumptionPercentage`);
    /// - `GRANT_PRORATED` needs 0 < consumptionPercentage < 100000 except for an auto-renewable
    ///   subscription (Apple computes that one): otherwise the preference is left out, which Apple
    ///   allows, rather than sending a request it refuses.
    public func requestBody(_ settings: Settings) -> [UInt8] {
        let preference = refundPreference(settings)
        // The key order of the library's ConsumptionRequest.CodingKeys.
        var writer = JSONWriter(capacity: 160)
        writer.beginObject()
        writer.key("customerConsented")
        writer.bool(settings.customerConsented)
        if let consumptionPercentage {
            writer.key("consumptionPercentage")
            writer.int(Int64(consumptionPercentage))
        }
        writer.key("deliveryStatus")
        writer.string(deliveryStatus.rawValue)
        if let preference {
            writer.key("refundPreference")
            writer.string(preference.rawValue)
        }
        writer.key("sampleContentProvided")
        writer.bool(settings.sampleContentProvided)
        writer.endObject()
        return writer.bytes
    }
}
